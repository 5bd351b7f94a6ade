    s += (double)x;
