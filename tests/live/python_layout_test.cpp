// The frame reader's layout table (libtrace/src/live/python_layouts.h) against the headers of the
// interpreter the tests run on: tests/live/python_layout_probe.c measures the row with that
// interpreter's own struct definitions. Another interpreter's row is checked where it runs (the
// GPU validation's PyTorch run asserts the line it reads).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "live/python_frames.h"
#include "live/python_layouts.h"

namespace stepwatch::live {
namespace {

TEST(PythonLayout, TheTableMatchesTheInterpretersOwnHeaders) {
  // The probe built against another interpreter's headers (python_layout_<version> tests), else
  // the one of the configured Python.
  const char* probe = std::getenv("STEPWATCH_PYTHON_LAYOUT_PROBE");
#ifdef STEPWATCH_PYTHON_LAYOUT_PROBE
  if (probe == nullptr) probe = STEPWATCH_PYTHON_LAYOUT_PROBE;
#endif
  if (probe == nullptr) GTEST_SKIP() << "no Python development headers at configure time";
  FILE* p = popen(probe, "r");
  ASSERT_NE(p, nullptr);
  char buf[512] = {0};
  ASSERT_NE(fgets(buf, sizeof buf, p), nullptr);
  pclose(p);
  std::istringstream in(buf);
  PythonLayout m;
  int through = 0;
  in >> m.major >> m.minor >> m.tstate_frames >> through >> m.cframe_current >> m.frame_code >> m.frame_previous >>
      m.frame_instr >> m.frame_owner >> m.owner_cstack >> m.code_filename >> m.code_name >> m.code_adaptive >>
      m.ascii_size >> m.compact_utf8;
  ASSERT_TRUE(in) << buf;
  const PythonLayout* row = find_python_layout(m.major, m.minor);
  ASSERT_NE(row, nullptr) << "Python " << m.major << "." << m.minor << " has no row; measured: " << buf;
  EXPECT_EQ(row->tstate_frames, m.tstate_frames);
  EXPECT_EQ(row->through_cframe, through != 0);
  if (through != 0) {
    EXPECT_EQ(row->cframe_current, m.cframe_current);
  }
  EXPECT_EQ(row->frame_code, m.frame_code);
  EXPECT_EQ(row->frame_previous, m.frame_previous);
  EXPECT_EQ(row->frame_instr, m.frame_instr);
  EXPECT_EQ(row->frame_owner, m.frame_owner);
  EXPECT_EQ(row->owner_cstack, m.owner_cstack);
  EXPECT_EQ(row->code_filename, m.code_filename);
  EXPECT_EQ(row->code_name, m.code_name);
  EXPECT_EQ(row->code_adaptive, m.code_adaptive);
  EXPECT_EQ(row->ascii_size, m.ascii_size);
  EXPECT_EQ(row->compact_utf8, m.compact_utf8);
}

TEST(PythonLayout, AProcessWithoutPythonReadsNoFrames) {
  // This test binary embeds no interpreter: the reader says so and reads nothing.
  std::string why;
  const PythonFrameReader r = PythonFrameReader::probe(why);
  EXPECT_FALSE(r.usable());
  EXPECT_EQ(why, "no Python interpreter in the process");
  char user[64], callee[64];
  EXPECT_EQ(r.innermost_user_frame(user, sizeof user, callee, sizeof callee), PythonFrameReader::Read::kNotPython);
}

TEST(PythonLayout, UnknownVersionsHaveNoRow) {
  EXPECT_EQ(find_python_layout(3, 10), nullptr);
  EXPECT_EQ(find_python_layout(3, 99), nullptr);
  EXPECT_NE(find_python_layout(3, 11), nullptr);
  EXPECT_NE(known_python_layouts_text().find("3.11"), std::string::npos);
}

}  // namespace
}  // namespace stepwatch::live
