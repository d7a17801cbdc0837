// State shared by the stand-in libraries (libstandin_core.so): switches, error messages, the
// trace, live handles, device memory and stream queues, and the leak check at exit.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "standin.h"

namespace standin {
namespace {

std::mutex& lock() {
  static std::mutex m;
  return m;
}

struct Objects {
  std::map<Kind, std::set<const void*>> live;
  std::map<uintptr_t, size_t> allocations;  // start -> size
  std::map<aclrtStream, std::vector<aclOpExecutor>> queues;
  std::map<std::string, int> calls;
};
Objects& objects() {
  static Objects* o = new Objects();  // outlives every other static: the exit check reads it
  return *o;
}

thread_local std::string pending_error;
thread_local std::string returned_error;

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kAllocation: return "device allocation";
    case Kind::kStream: return "stream";
    case Kind::kTensor: return "aclTensor";
    case Kind::kIntArray: return "aclIntArray";
    case Kind::kTensorList: return "aclTensorList";
    case Kind::kExecutor: return "aclOpExecutor";
  }
  return "?";
}

// OPGATE_STANDIN_STRICT_EXIT=1: a process that initialised the runtime must end with aclFinalize
// called and every handle released; otherwise it exits with status 3 and says what leaked.
__attribute__((destructor)) void check_at_exit() {
  if (env("OPGATE_STANDIN_STRICT_EXIT") != "1") return;
  const State& s = state();
  if (s.init_pid != getpid()) return;
  std::string problems;
  if (!s.finalised) problems += " aclFinalize was not called;";
  for (const auto& [kind, set] : objects().live) {
    if (!set.empty()) problems += fmt::format(" {} live {}(s);", set.size(), kind_name(kind));
  }
  if (problems.empty()) return;
  const std::string text = "stand-in: at exit:" + problems;
  trace(text);
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
  _exit(3);
}

}  // namespace

std::string env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v == nullptr || *v == '\0' ? fallback : v;
}

std::optional<int> injected_failure(const char* symbol, int default_code) {
  int n = 0;
  {
    std::lock_guard<std::mutex> g(lock());
    n = ++objects().calls[symbol];
  }
  const std::string spec = env("OPGATE_STANDIN_FAIL");
  size_t start = 0;
  while (start < spec.size()) {
    const size_t end = std::min(spec.find(',', start), spec.size());
    std::string item = spec.substr(start, end - start);
    start = end + 1;
    int code = default_code;
    if (const size_t colon = item.find(':'); colon != std::string::npos) {
      code = std::atoi(item.c_str() + colon + 1);
      item.resize(colon);
    }
    int nth = 0;
    if (const size_t at = item.find('@'); at != std::string::npos) {
      nth = std::atoi(item.c_str() + at + 1);
      item.resize(at);
    }
    if (item == symbol && (nth == 0 || nth == n)) {
      set_error(fmt::format("stand-in: injected failure of {} (call {}) with {}", symbol, n, code));
      trace(fmt::format("{} injected failure {}", symbol, code));
      return code;
    }
  }
  return std::nullopt;
}

void set_error(const std::string& message) { pending_error = message; }

const char* take_error() {
  if (pending_error.empty()) return nullptr;
  returned_error = std::move(pending_error);
  pending_error.clear();
  return returned_error.c_str();
}

void trace(const std::string& line) {
  const std::string path = env("OPGATE_STANDIN_TRACE");
  if (path.empty()) return;
  const std::string text = fmt::format("{} {}\n", getpid(), line);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  const ssize_t n = write(fd, text.data(), text.size());
  (void)n;
  close(fd);
}

std::string shape_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

State& state() {
  static State s;
  return s;
}

int require_context(const char* call, bool need_device) {
  const State& s = state();
  if (s.init_pid != 0 && s.init_pid != getpid()) {
    set_error(fmt::format("stand-in: {} in process {}, but aclInit ran in process {} before fork; a context "
                          "does not survive fork",
                          call, getpid(), s.init_pid));
    return opgate::acl::kErrorRtContextNull;
  }
  if (!s.initialised) {
    set_error(fmt::format("stand-in: {} before aclInit", call));
    return opgate::acl::kErrorUninitialize;
  }
  if (need_device && s.device < 0) {
    set_error(fmt::format("stand-in: {} without a current device (aclrtSetDevice)", call));
    return opgate::acl::kErrorRtContextNull;
  }
  return 0;
}

void add_object(Kind kind, const void* p) {
  std::lock_guard<std::mutex> g(lock());
  objects().live[kind].insert(p);
}

bool remove_object(Kind kind, const void* p) {
  std::lock_guard<std::mutex> g(lock());
  return objects().live[kind].erase(p) == 1;
}

bool is_live(Kind kind, const void* p) {
  std::lock_guard<std::mutex> g(lock());
  return objects().live[kind].count(p) == 1;
}

void* device_alloc(size_t bytes) {
  const size_t rounded = (bytes + 511) / 512 * 512;
  void* p = std::aligned_alloc(512, rounded);
  if (p == nullptr) return nullptr;
  std::memset(p, 0xDB, rounded);  // fresh device memory is garbage, never zero
  std::lock_guard<std::mutex> g(lock());
  objects().allocations[reinterpret_cast<uintptr_t>(p)] = bytes;
  objects().live[Kind::kAllocation].insert(p);
  return p;
}

bool device_free(void* p) {
  {
    std::lock_guard<std::mutex> g(lock());
    auto& allocs = objects().allocations;
    const auto it = allocs.find(reinterpret_cast<uintptr_t>(p));
    if (it == allocs.end()) return false;
    allocs.erase(it);
    objects().live[Kind::kAllocation].erase(p);
  }
  std::free(p);
  return true;
}

std::optional<std::pair<uint8_t*, size_t>> device_range(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> g(lock());
  const auto& allocs = objects().allocations;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = allocs.upper_bound(addr);
  if (it == allocs.begin()) return std::nullopt;
  --it;
  if (addr < it->first || addr - it->first > it->second || bytes > it->second - (addr - it->first)) {
    return std::nullopt;
  }
  return std::make_pair(reinterpret_cast<uint8_t*>(it->first), it->second);
}

bool touches_device(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> g(lock());
  const auto lo = reinterpret_cast<uintptr_t>(p);
  const uintptr_t hi = lo + bytes;
  for (const auto& [start, size] : objects().allocations) {
    if (start < hi && lo < start + size) return true;
  }
  return false;
}

void enqueue(aclrtStream stream, aclOpExecutor job) {
  std::lock_guard<std::mutex> g(lock());
  objects().queues[stream].push_back(std::move(job));
}

std::string drain(aclrtStream stream) {
  std::vector<aclOpExecutor> jobs;
  {
    std::lock_guard<std::mutex> g(lock());
    jobs.swap(objects().queues[stream]);
  }
  for (auto& job : jobs) {
    std::string why = job.kernel();
    if (!why.empty()) return fmt::format("{}: {}", job.op, why);
  }
  return "";
}

std::optional<std::string> pending_writer(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> g(lock());
  const auto lo = reinterpret_cast<uintptr_t>(p);
  const uintptr_t hi = lo + bytes;
  for (const auto& [stream, jobs] : objects().queues) {
    for (const auto& job : jobs) {
      for (const auto& [start, size] : job.writes) {
        const auto s = reinterpret_cast<uintptr_t>(start);
        if (s < hi && lo < s + size) return job.op;
      }
    }
  }
  return std::nullopt;
}

void drop_queue(aclrtStream stream) {
  std::lock_guard<std::mutex> g(lock());
  objects().queues.erase(stream);
}

}  // namespace standin
