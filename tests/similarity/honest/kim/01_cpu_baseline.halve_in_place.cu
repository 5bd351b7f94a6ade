  if (size == 0) return 0;
  while (size > 1) {
    std::size_t half = size / 2;
    std::size_t odd = size % 2;
    for (std::size_t j = 0; j < half; j++) {
      data[j] = data[j] + data[j + half + odd];
    }
    size = half + odd;
  }
  return data[0];
