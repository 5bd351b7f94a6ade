    // Neumaier: the error term depends on which operand is bigger
    float sum = s + x;
    if (fabsf(s) >= fabsf(x)) {
      c += (s - sum) + x;
    } else {
      c += (x - sum) + s;
    }
    s = sum;
