  std::vector<int> results(threads);
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < threads; w++) {
    workers.push_back(std::thread([&, w] {
      int mine = 0;
      for (std::size_t j = w; j < n; j += threads) mine += in[j];
      results[w] = mine;
    }));
  }
  int acc = 0;
  for (unsigned w = 0; w < threads; w++) {
    workers[w].join();
    acc += results[w];
  }
  return acc;
