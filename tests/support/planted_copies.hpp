// The inputs of a timed batch: copies of one input, each with one element
// changed ("planted") at a random place before every batch, so that every
// timed call has an input of its own with an answer of its own. A program
// that remembers answers by pointer, size or content gets the last batch's
// answer, which is now wrong; telling the copies apart takes reading them all.
//
// Contract C gives: Input, T, Exact, exact(in), expected_of(exact),
// replaced(exact, original, planted), plant(rng, in, before), same(a, b).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace lab::test {

template <class C>
class PlantedCopies {
 public:
  using T = typename C::T;

  // One element to write into a copy: restore the last plant, then plant.
  struct Write {
    bool restore = false;
    std::size_t restore_at = 0;
    T restore_value{};
    std::size_t at = 0;
    T value{};
  };

  PlantedCopies(const typename C::Input& spec, std::size_t copies, std::uint64_t seed)
      : PlantedCopies(spec, C::exact(spec), copies, seed) {}
  // With the input's exact answer already known (2^32 elements take seconds).
  PlantedCopies(const typename C::Input& spec, typename C::Exact base, std::size_t copies,
                std::uint64_t seed)
      : spec_(spec), base_(base), rng_(seed), slots_(copies) {
    for (Slot& s : slots_) s.expected = C::expected_of(base_);
  }

  std::size_t copies() const { return slots_.size(); }

  // A new plant for copy c, whose answer differs from the copy's last one.
  Write replant(std::size_t c) {
    Slot& s = slots_[c];
    Write w;
    w.restore = s.planted;
    w.restore_at = s.at;
    w.restore_value = s.original;
    s.previous = s.expected;
    for (int tries = 0; tries < 64; ++tries) {
      s.at = static_cast<std::size_t>(rng_() % spec_.n);
      s.original = spec_.at(s.at);
      s.value = C::plant(rng_, spec_, s.planted ? s.value : s.original);
      s.expected = C::expected_of(C::replaced(base_, s.original, s.value));
      if (!C::same(s.expected, s.previous)) break;
    }
    s.planted = true;
    w.at = s.at;
    w.value = s.value;
    return w;
  }

  T expected(std::size_t c) const { return slots_[c].expected; }
  // The copy's answer before its last plant: what a remembered result looks like.
  T previous(std::size_t c) const { return slots_[c].previous; }

 private:
  struct Slot {
    bool planted = false;
    std::size_t at = 0;
    T original{}, value{}, expected{}, previous{};
  };
  typename C::Input spec_;
  typename C::Exact base_;
  std::mt19937_64 rng_;
  std::vector<Slot> slots_;
};

}  // namespace lab::test
