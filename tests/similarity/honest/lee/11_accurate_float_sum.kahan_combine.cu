    float hi = s + o.s;
    float back = hi - o.s;
    float err = (s - back) + (o.s - (hi - back));
    c = c + (o.c + err);
    s = hi;
