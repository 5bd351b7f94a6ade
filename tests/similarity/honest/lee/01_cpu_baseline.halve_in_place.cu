  if (size <= 1) return size ? data[0] : 0;
  std::size_t pairs = size / 2;
  for (std::size_t k = 0; k < pairs; ++k)
    data[k] += data[size - 1 - k];
  // odd: the middle element stays where it is, at index pairs
  return halve_in_place(data, size - pairs);
