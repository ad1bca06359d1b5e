// Where an import puts its events: one vector sized once, not grown by doubling. Private to
// libtrace/src/import.
//
// Doubling a vector of events copies all of them at each step and, at the last one, holds the old
// and the new copy at once (1.5-2x the events). Instead the first few thousand events give the
// rate of events per byte of text, and the text's expected size (a file's size, a gzip size
// trailer) then sizes the vector once, with a margin: capacity past the events is address space
// the kernel never backs with memory. When the guess falls short, or the size is unknown (a pipe),
// further events go into fixed blocks, joined into one exact vector at the end, each part freed
// as it is copied: the peak stays about one copy of the events.
#pragma once

#include <cstdint>
#include <vector>

#include "stepwatch/core/event.h"

namespace stepwatch::import_detail {

class EventCollector {
 public:
  EventCollector();
  // A default Event to fill in; valid until the next add().
  Event& add() {
    if (current_->size() == current_->capacity()) grow();
    return current_->emplace_back();
  }
  // How much text the events so far came from, and how much the whole input is expected to have
  // (0: unknown). Read at the first growth to size the vector.
  void note_text(uint64_t text_bytes_read, uint64_t expected_text_bytes) {
    text_read_ = text_bytes_read;
    text_expected_ = expected_text_bytes;
  }
  std::vector<Event> take();

  static constexpr size_t kFirstEvents = 8192;
  static constexpr size_t kBlockEvents = 65536;

 private:
  void grow();

  std::vector<Event> main_;
  std::vector<std::vector<Event>> blocks_;
  std::vector<Event>* current_ = &main_;
  bool sized_ = false;
  uint64_t text_read_ = 0;
  uint64_t text_expected_ = 0;
};

}  // namespace stepwatch::import_detail
