// The checker's side of a run's admission to the GPU (grader/engine/
// admission.py): two pipes the grader passes with --admission-fds=READY,GO.
// The checker says where it stands with one byte on READY and waits for one
// on GO before it goes on:
//   'r'  its processes are up (its context, the runner); it may test once
//        the grader has given it a run slot (or the GPU alone, a timed run);
//   'n'  between two passes (checker_passes.hpp): the last runner has ended
//        and nothing of the lab's code is alive; it may start the next one
//        once the grader lets a run start on this GPU again (a drain for a
//        timed run may come first).
// Without the pipes it asks nobody. A grader that closes GO instead of
// answering is stopping this run: the checker exits (4) before anything else
// of the lab's code starts or runs.
#pragma once

namespace lab::test {

class Admission {
 public:
  Admission() = default;
  Admission(int ready_fd, int go_fd);
  bool asked() const { return ready_fd_ >= 0; }
  void up() { say_and_wait('r'); }
  void between_passes() { say_and_wait('n'); }
  // No more questions: the grader reads READY as closed.
  void close();

 private:
  void say_and_wait(char byte);
  int ready_fd_ = -1, go_fd_ = -1;
};

}  // namespace lab::test
