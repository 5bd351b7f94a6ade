  int acc = 0;
  std::size_t k = 0;
  while (k < n) {
    acc += in[k];
    k++;
  }
  return acc;
