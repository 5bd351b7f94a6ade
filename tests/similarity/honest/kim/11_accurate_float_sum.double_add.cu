    s = s + double(x);
