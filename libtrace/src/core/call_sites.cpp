#include "core/call_sites.h"

#include <algorithm>
#include <array>
#include <charconv>

namespace stepwatch {
namespace {

// Top-level packages of PyTorch itself: a sync inside them was asked for by the code that called
// them, and that caller is the line to change.
constexpr std::array<std::string_view, 8> kFrameworkPackages = {
    "torch", "torchvision", "torchaudio", "torchtext", "torchdata", "functorch", "triton", "torchrec"};

// Python 3.11's sys.stdlib_module_names without the private ones. Kineto writes standard-library
// frames relative to the interpreter's lib directory ("logging/__init__.py", "typing.py"), so the
// first path component tells them apart; live frames are absolute and are told by their directory.
constexpr std::string_view kStdlibModules[] = {
    "abc", "aifc", "antigravity", "argparse", "array", "ast", "asynchat", "asyncio", "asyncore", "atexit",
    "audioop", "base64", "bdb", "binascii", "bisect", "builtins", "bz2", "cProfile", "calendar", "cgi",
    "cgitb", "chunk", "cmath", "cmd", "code", "codecs", "codeop", "collections", "colorsys", "compileall",
    "concurrent", "configparser", "contextlib", "contextvars", "copy", "copyreg", "crypt", "csv", "ctypes",
    "curses", "dataclasses", "datetime", "dbm", "decimal", "difflib", "dis", "distutils", "doctest",
    "email", "encodings", "ensurepip", "enum", "errno", "faulthandler", "fcntl", "filecmp", "fileinput",
    "fnmatch", "fractions", "ftplib", "functools", "gc", "genericpath", "getopt", "getpass", "gettext",
    "glob", "graphlib", "grp", "gzip", "hashlib", "heapq", "hmac", "html", "http", "idlelib", "imaplib",
    "imghdr", "imp", "importlib", "inspect", "io", "ipaddress", "itertools", "json", "keyword", "lib2to3",
    "linecache", "locale", "logging", "lzma", "mailbox", "mailcap", "marshal", "math", "mimetypes", "mmap",
    "modulefinder", "msilib", "msvcrt", "multiprocessing", "netrc", "nis", "nntplib", "nt", "ntpath",
    "nturl2path", "numbers", "opcode", "operator", "optparse", "os", "ossaudiodev", "pathlib", "pdb",
    "pickle", "pickletools", "pipes", "pkgutil", "platform", "plistlib", "poplib", "posix", "posixpath",
    "pprint", "profile", "pstats", "pty", "pwd", "py_compile", "pyclbr", "pydoc", "pydoc_data", "pyexpat",
    "queue", "quopri", "random", "re", "readline", "reprlib", "resource", "rlcompleter", "runpy", "sched",
    "secrets", "select", "selectors", "shelve", "shlex", "shutil", "signal", "site", "smtpd", "smtplib",
    "sndhdr", "socket", "socketserver", "spwd", "sqlite3", "sre_compile", "sre_constants", "sre_parse",
    "ssl", "stat", "statistics", "string", "stringprep", "struct", "subprocess", "sunau", "symtable", "sys",
    "sysconfig", "syslog", "tabnanny", "tarfile", "telnetlib", "tempfile", "termios", "textwrap", "this",
    "threading", "time", "timeit", "tkinter", "token", "tokenize", "tomllib", "trace", "traceback",
    "tracemalloc", "tty", "turtle", "turtledemo", "types", "typing", "unicodedata", "unittest", "urllib",
    "uu", "uuid", "venv", "warnings", "wave", "weakref", "webbrowser", "winreg", "winsound", "wsgiref",
    "xdrlib", "xml", "xmlrpc", "zipapp", "zipfile", "zipimport", "zlib", "zoneinfo"};

struct FrameName {
  std::string_view file;
  int line = 0;
  std::string_view function;
};

// "file(line): function"; nullopt for names of another shape.
std::optional<FrameName> parse_frame(std::string_view name) {
  const size_t colon = name.find("): ");
  if (colon == std::string_view::npos) return std::nullopt;
  const size_t open = name.rfind('(', colon);
  if (open == std::string_view::npos || open == 0) return std::nullopt;
  FrameName f;
  f.file = name.substr(0, open);
  const std::string_view digits = name.substr(open + 1, colon - open - 1);
  if (std::from_chars(digits.data(), digits.data() + digits.size(), f.line).ec != std::errc{}) return std::nullopt;
  f.function = name.substr(colon + 3);
  return f;
}

// What follows site-packages/ or dist-packages/ (how Kineto writes installed packages), else the path.
std::string_view package_relative(std::string_view file) {
  for (std::string_view marker : {std::string_view("/site-packages/"), std::string_view("/dist-packages/")}) {
    if (const size_t at = file.rfind(marker); at != std::string_view::npos) return file.substr(at + marker.size());
  }
  return file;
}


std::string_view first_component(std::string_view path) {
  const size_t slash = path.find('/');
  std::string_view head = path.substr(0, slash);
  if (slash == std::string_view::npos && head.size() > 3 && head.substr(head.size() - 3) == ".py") {
    head.remove_suffix(3);
  }
  return head;
}

}  // namespace

bool is_installed(std::string_view file) {
  return file.find("/site-packages/") != std::string_view::npos || file.find("/dist-packages/") != std::string_view::npos;
}

bool is_framework_file(std::string_view file) {
  if (!file.empty() && file.front() == '<') return true;  // <frozen importlib._bootstrap>, <string>
  const std::string_view relative = package_relative(file);
  const std::string_view head = first_component(relative);
  if (std::find(kFrameworkPackages.begin(), kFrameworkPackages.end(), head) != kFrameworkPackages.end()) return true;
  if (!file.empty() && file.front() == '/') {
    // Live: absolute paths. The interpreter's own library sits in .../lib/python3.X/.
    return !is_installed(file) && file.find("/lib/python3") != std::string_view::npos;
  }
  if (relative != file) return false;  // an installed package other than torch's
  return std::binary_search(std::begin(kStdlibModules), std::end(kStdlibModules), head);
}

namespace {

// torch/nn/modules/module.py's _call_impl / _wrapped_call_impl: how `module(x)` runs forward().
bool is_module_call(std::string_view frame_name) {
  const std::optional<FrameName> f = parse_frame(frame_name);
  return f && package_relative(f->file) == "torch/nn/modules/module.py" &&
         (f->function == "_call_impl" || f->function == "_wrapped_call_impl");
}

// "nn.Module: ResNet_0" -> "ResNet.forward()"
std::string module_call_text(std::string_view wrapper) {
  std::string_view cls = wrapper.substr(11);
  const size_t underscore = cls.rfind('_');
  if (underscore != std::string_view::npos && underscore + 1 < cls.size() &&
      cls.find_first_not_of("0123456789", underscore + 1) == std::string_view::npos) {
    cls = cls.substr(0, underscore);
  }
  return std::string(cls) + ".forward()";
}

}  // namespace

FrameRole frame_role(std::string_view name) {
  if (name.substr(0, 10) == "<built-in ") return FrameRole::kBuiltin;
  const std::optional<FrameName> f = parse_frame(name);
  if (!f) return FrameRole::kWrapper;
  return is_framework_file(f->file) ? FrameRole::kFramework : FrameRole::kUser;
}

std::string call_text(std::string_view name) {
  constexpr std::string_view kMethod = "<built-in method ";
  constexpr std::string_view kFunction = "<built-in function ";
  if (name.substr(0, kMethod.size()) == kMethod) {
    // "<built-in method item of Tensor object at 0x7f…>"
    const std::string_view rest = name.substr(kMethod.size());
    const size_t of = rest.find(" of ");
    if (of == std::string_view::npos) return {};
    const std::string_view method = rest.substr(0, of);
    std::string_view type = rest.substr(of + 4);
    type = type.substr(0, type.find(" object"));
    // A method of a type object or a binding's capsule is a module-level function to the user.
    const bool plain = type == "type" || type == "PyCapsule" || type.substr(0, 9) == "pybind11_";
    return (plain ? std::string() : std::string(type) + ".") + std::string(method) + "()";
  }
  if (name.substr(0, kFunction.size()) == kFunction) {
    std::string_view fn = name.substr(kFunction.size());
    if (!fn.empty() && fn.back() == '>') fn.remove_suffix(1);
    return std::string(fn) + "()";
  }
  const std::optional<FrameName> f = parse_frame(name);
  if (!f || f->file.empty() || f->file.front() == '<') return {};
  // "torch/cuda/__init__.py(975): synchronize" -> "torch.cuda.synchronize()"
  std::string module(package_relative(f->file));
  if (module.size() > 3 && module.compare(module.size() - 3, 3, ".py") == 0) module.resize(module.size() - 3);
  if (module.size() > 9 && module.compare(module.size() - 9, 9, "/__init__") == 0) module.resize(module.size() - 9);
  if (!module.empty() && module.front() == '/') module = module.substr(module.rfind('/') + 1);
  std::replace(module.begin(), module.end(), '/', '.');
  return module + "." + std::string(f->function) + "()";
}

std::string site_text(std::string_view name, bool call_line) {
  const std::optional<FrameName> f = parse_frame(name);
  if (!f) return std::string(name);
  const std::string file(package_relative(f->file));
  const std::string line = std::to_string(f->line);
  if (call_line) return file + ":" + line + " in " + std::string(f->function);
  return std::string(f->function) + "() defined at " + file + ":" + line;
}

void CallSiteIndex::build(std::span<const Event> events, const NameTable& names) {
  for (uint32_t idx : pending_) {
    const Event& e = events[idx];
    if (e.name == kNoName) continue;  // a native site the pipeline could not name
    frames_[e.thread].push_back({e.start_ns, e.end_ns, idx, -1});
    if (e.correlation != 0) by_correlation_.emplace_back(e.correlation, idx);
    auto [it, inserted] = roles_.try_emplace(e.name, FrameRole::kWrapper);
    if (inserted) {
      // A live native site is named by the pipeline; a live Python frame is the user frame.
      it->second = e.has_flag(event_flags::kNativeSite) ? FrameRole::kUser : frame_role(names.view(e.name));
    }
  }
  pending_.clear();
  pending_.shrink_to_fit();
  for (auto& [thread, list] : frames_) {
    // Outer frames first where two start together, then each frame's parent by a stack walk.
    std::sort(list.begin(), list.end(), [](const Frame& a, const Frame& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
    });
    std::vector<int32_t> open;
    for (size_t i = 0; i < list.size(); ++i) {
      while (!open.empty() && list[static_cast<size_t>(open.back())].end_ns <= list[i].start_ns) open.pop_back();
      list[i].parent = open.empty() ? -1 : open.back();
      open.push_back(static_cast<int32_t>(i));
    }
  }
  std::sort(by_correlation_.begin(), by_correlation_.end());
}

FrameRole CallSiteIndex::role_of(NameId name) const {
  const auto it = roles_.find(name);
  return it == roles_.end() ? FrameRole::kWrapper : it->second;
}

CallSite CallSiteIndex::live_site(const Event& frame, const NameTable& names) {
  CallSite site;
  if (frame.has_flag(event_flags::kNativeSite)) {
    site.where = std::string(names.view(frame.name));
    return site;
  }
  site.where = site_text(names.view(frame.name), frame.has_flag(event_flags::kCallLine));
  if (frame.bytes != 0 && frame.bytes <= UINT32_MAX) site.call = call_text(names.view(static_cast<NameId>(frame.bytes)));
  return site;
}

std::optional<CallSite> CallSiteIndex::from_chain(int32_t innermost, const std::vector<Frame>& frames,
                                                  std::span<const Event> events, const NameTable& names) const {
  int32_t below = -1;   // the last frame before the user frame that says what was called
  int32_t module = -1;  // the outermost "nn.Module: X_0" wrapper below it
  for (int32_t j = innermost; j >= 0; j = frames[static_cast<size_t>(j)].parent) {
    const Event& e = events[frames[static_cast<size_t>(j)].event];
    const FrameRole role = role_of(e.name);
    if (role == FrameRole::kUser) {
      if (e.correlation != 0 || e.has_flag(event_flags::kNativeSite)) return live_site(e, names);
      CallSite site;
      site.where = site_text(names.view(e.name), e.has_flag(event_flags::kCallLine));
      if (below >= 0) {
        const std::string_view callee = names.view(events[frames[static_cast<size_t>(below)].event].name);
        // `model(x)` goes through torch's Module._call_impl: the module it called says more.
        if (module >= 0 && is_module_call(callee)) {
          site.call = module_call_text(names.view(events[frames[static_cast<size_t>(module)].event].name));
        } else {
          site.call = call_text(callee);
        }
      }
      return site;
    }
    if (role != FrameRole::kWrapper) below = j;
    if (role == FrameRole::kWrapper && names.view(e.name).substr(0, 11) == "nn.Module: ") module = j;
  }
  return std::nullopt;
}

std::optional<CallSite> CallSiteIndex::site_of(const Event& call, uint32_t fallback_thread, std::span<const Event> events,
                                               const NameTable& names) const {
  if (frames_.empty()) return std::nullopt;
  if (call.correlation != 0 && !by_correlation_.empty()) {
    const auto it = std::lower_bound(by_correlation_.begin(), by_correlation_.end(),
                                     std::pair<uint64_t, uint32_t>{call.correlation, 0});
    if (it != by_correlation_.end() && it->first == call.correlation) return live_site(events[it->second], names);
  }
  const auto list = frames_.find(call.thread != 0 ? call.thread : fallback_thread);
  if (list == frames_.end()) return std::nullopt;
  const std::vector<Frame>& frames = list->second;
  // The call's midpoint: inside the frames around it whichever clock read their ends first.
  const int64_t t = call.start_ns + call.duration_ns() / 2;
  auto it = std::upper_bound(frames.begin(), frames.end(), t, [](int64_t x, const Frame& f) { return x < f.start_ns; });
  if (it == frames.begin()) return std::nullopt;
  int32_t j = static_cast<int32_t>(it - frames.begin()) - 1;
  while (j >= 0 && frames[static_cast<size_t>(j)].end_ns < t) j = frames[static_cast<size_t>(j)].parent;
  if (j < 0) return std::nullopt;
  return from_chain(j, frames, events, names);
}

}  // namespace stepwatch
