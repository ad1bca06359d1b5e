// Call sites (core/call_sites.h): how frame names read, and the innermost user frame around a
// blocking call — offline from Kineto's nested python_function frames, live from the frame the
// library read at the call, tied to it by correlation id.
#include <gtest/gtest.h>

#include "core/call_sites.h"
#include "stepwatch/core/config.h"
#include "stepwatch/core/timeline.h"
#include "stepwatch/core/trace.h"

namespace stepwatch {
namespace {

TEST(CallSiteNames, FramesAreToldApartByTheirFiles) {
  EXPECT_EQ(frame_role("train.py(40): log_metrics"), FrameRole::kUser);
  EXPECT_EQ(frame_role("moca/library/profiling/profile.py(34): run"), FrameRole::kUser);
  EXPECT_EQ(frame_role("vllm/v1/utils.py(131): copy_to_gpu"), FrameRole::kUser);  // not torch's
  EXPECT_EQ(frame_role("torch/nn/modules/module.py(1780): _call_impl"), FrameRole::kFramework);
  EXPECT_EQ(frame_role("torchvision/models/resnet.py(285): forward"), FrameRole::kFramework);
  EXPECT_EQ(frame_role("logging/__init__.py(1477): info"), FrameRole::kFramework);
  EXPECT_EQ(frame_role("typing.py(306): inner"), FrameRole::kFramework);
  EXPECT_EQ(frame_role("<frozen importlib._bootstrap>(1176): _find_and_load"), FrameRole::kFramework);
  EXPECT_EQ(frame_role("<built-in method item of Tensor object at 0x7fc740c45b50>"), FrameRole::kBuiltin);
  EXPECT_EQ(frame_role("<built-in function _cuda_synchronize>"), FrameRole::kBuiltin);
  EXPECT_EQ(frame_role("nn.Module: ResNet_0"), FrameRole::kWrapper);
  // Live frames carry absolute paths.
  EXPECT_EQ(frame_role("/home/u/proj/train.py(142): train_step"), FrameRole::kUser);
  EXPECT_EQ(frame_role("/usr/lib/python3.11/logging/__init__.py(1477): info"), FrameRole::kFramework);
  EXPECT_EQ(frame_role("/venv/lib/python3.11/site-packages/torch/cuda/__init__.py(975): synchronize"),
            FrameRole::kFramework);
  EXPECT_EQ(frame_role("/venv/lib/python3.11/site-packages/transformers/trainer.py(2300): train"), FrameRole::kUser);
}

TEST(CallSiteNames, WhatASiteCalledReadsAsTheUserWroteIt) {
  EXPECT_EQ(call_text("<built-in method item of Tensor object at 0x7fc740c45b50>"), "Tensor.item()");
  EXPECT_EQ(call_text("<built-in method conv2d of type object at 0x7fc958507a00>"), "conv2d()");
  EXPECT_EQ(call_text("<built-in function _cuda_synchronize>"), "_cuda_synchronize()");
  EXPECT_EQ(call_text("torch/cuda/__init__.py(975): synchronize"), "torch.cuda.synchronize()");
  EXPECT_EQ(call_text("/venv/lib/python3.11/site-packages/torch/cuda/__init__.py(975): synchronize"),
            "torch.cuda.synchronize()");
  EXPECT_EQ(call_text("nn.Module: ResNet_0"), "");
  EXPECT_EQ(site_text("train.py(40): log_metrics", false), "log_metrics() defined at train.py:40");
  EXPECT_EQ(site_text("train.py(142): train_step", true), "train.py:142 in train_step");
  EXPECT_EQ(site_text("/venv/lib/python3.11/site-packages/trl/trainer.py(9): step", true), "trl/trainer.py:9 in step");
}

class CallSiteIndexTest : public ::testing::Test {
 protected:
  Event& frame(std::string_view name, int64_t start, int64_t end, uint32_t thread = 7) {
    Event& e = trace_.add(EventKind::kPythonFrame, name, start, end);
    e.thread = thread;
    return e;
  }
  Event& call(std::string_view name, int64_t start, int64_t end, uint32_t thread = 7) {
    Event& e = trace_.add(EventKind::kApiCall, name, start, end);
    e.thread = thread;
    e.detail = static_cast<uint8_t>(ApiClass::kStreamSync);
    return e;
  }
  std::optional<CallSite> site_of(size_t call_index) {
    timeline_ = std::make_unique<Timeline>(trace_.events, trace_.names, config_);
    return timeline_->call_site_of(trace_.events[call_index]);
  }
  Trace trace_;
  AnalysisConfig config_;
  std::unique_ptr<Timeline> timeline_;
};

TEST_F(CallSiteIndexTest, TheInnermostUserFrameAndWhatItCalled) {
  frame("train.py(8): <module>", 0, 1000);
  frame("train.py(30): train_step", 10, 900);
  frame("train.py(40): log_metrics", 100, 300);  // a sibling first: ended before the call
  frame("train.py(40): log_metrics", 400, 600);
  frame("<built-in method item of Tensor object at 0x7f>", 410, 590);
  frame("torch/_tensor.py(1000): __format__", 420, 580);  // torch's own code under the built-in
  call("cudaStreamSynchronize", 450, 550);
  const auto site = site_of(trace_.events.size() - 1);
  ASSERT_TRUE(site);
  EXPECT_EQ(site->where, "log_metrics() defined at train.py:40");
  EXPECT_EQ(site->call, "Tensor.item()");
}

TEST_F(CallSiteIndexTest, AModuleCallNamesTheModule) {
  frame("train.py(41): main", 0, 1000);
  frame("torch/nn/modules/module.py(1780): _wrapped_call_impl", 10, 900);
  frame("torch/nn/modules/module.py(1791): _call_impl", 11, 899);
  frame("nn.Module: ResNet_0", 12, 898);
  frame("torchvision/models/resnet.py(285): forward", 13, 897);
  call("hipFree", 100, 200);
  const auto site = site_of(trace_.events.size() - 1);
  ASSERT_TRUE(site);
  EXPECT_EQ(site->where, "main() defined at train.py:41");
  EXPECT_EQ(site->call, "ResNet.forward()");
}

TEST_F(CallSiteIndexTest, NoUserFrameAroundTheCallIsNoSite) {
  frame("torch/autograd/__init__.py(200): backward", 0, 1000);
  call("cudaStreamSynchronize", 100, 200);
  call("cudaStreamSynchronize", 1100, 1200);  // after every frame
  call("cudaStreamSynchronize", 100, 200, 99);  // another thread (autograd's C++ worker)
  EXPECT_FALSE(site_of(1));
  EXPECT_FALSE(site_of(2));
  EXPECT_FALSE(site_of(3));
}

TEST_F(CallSiteIndexTest, ALiveFrameIsFoundByItsCallsCorrelation) {
  Event& callee = frame("/venv/lib/python3.11/site-packages/torch/cuda/__init__.py(975): synchronize", 0, 0);
  callee.kind = EventKind::kRange;  // only its name is used: the live frame refers to it
  const NameId callee_name = callee.name;
  Event& live = frame("train.py(142): train_step", 1000, 2000, 5);
  live.correlation = 77;
  live.flags = event_flags::kCallLine;
  live.bytes = callee_name;
  Event& c = call("cudaStreamSynchronize", 1001, 1999, 6);  // CUPTI's thread id need not match
  c.correlation = 77;
  const auto site = site_of(trace_.events.size() - 1);
  ASSERT_TRUE(site);
  EXPECT_EQ(site->where, "train.py:142 in train_step");
  EXPECT_EQ(site->call, "torch.cuda.synchronize()");
}

TEST_F(CallSiteIndexTest, ANativeSiteReadsAsItsName) {
  Event& live = frame("sync_and_log+0x1c in trainer", 1000, 2000);
  live.correlation = 5;
  live.flags = event_flags::kNativeSite;
  Event& c = call("cudaStreamSynchronize", 1001, 1999);
  c.correlation = 5;
  const auto site = site_of(trace_.events.size() - 1);
  ASSERT_TRUE(site);
  EXPECT_EQ(site->where, "sync_and_log+0x1c in trainer");
  EXPECT_EQ(site->call, "");
}

}  // namespace
}  // namespace stepwatch
