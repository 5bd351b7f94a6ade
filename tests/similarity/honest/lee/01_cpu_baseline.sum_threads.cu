  if (n == 0) return 0;
  unsigned used = threads < n ? threads : static_cast<unsigned>(n);
  std::vector<long long> part(used, 0);
  std::vector<std::thread> team;
  std::size_t per = n / used, extra = n % used, start = 0;
  for (unsigned k = 0; k < used; ++k) {
    std::size_t len = per + (k < extra ? 1 : 0);
    team.emplace_back([&part, in, k, start, len] {
      for (std::size_t j = start; j < start + len; ++j) part[k] += in[j];
    });
    start += len;
  }
  for (auto& t : team) t.join();
  long long total = 0;
  for (long long v : part) total += v;
  return static_cast<int>(total);
