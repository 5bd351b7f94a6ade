    // two-sum without a branch (Knuth): works for any magnitudes
    float hi = s + x;
    float back = hi - x;
    float err = (s - back) + (x - (hi - back));
    c = c + err;
    s = hi;
