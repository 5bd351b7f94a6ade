    float sum = s + o.s;
    float lost;
    if (fabsf(s) >= fabsf(o.s)) {
      lost = (s - sum) + o.s;
    } else {
      lost = (o.s - sum) + s;
    }
    s = sum;
    c += o.c;
    c += lost;
