// Shared half of the stand-in operator library: descriptors -> SpecMaps, executors, launch, and
// the kernel that gathers strided device tensors, runs the emulator and scatters the results.
#include "standin_ops.h"

#include <csignal>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace standin {
namespace {

// aclDataType -> opgate dtype (§6.1); false for a type opgate never passes.
bool dtype_of(int32_t acl, opgate::DType& out) {
  using opgate::DType;
  switch (acl) {
    case 0: out = DType::kF32; return true;
    case 1: out = DType::kF16; return true;
    case 2: out = DType::kI8; return true;
    case 3: out = DType::kI32; return true;
    case 4: out = DType::kU8; return true;
    case 9: out = DType::kI64; return true;
    case 10: out = DType::kU64; return true;
    case 11: out = DType::kF64; return true;
    case 12: out = DType::kBool; return true;
    case 27: out = DType::kBF16; return true;
    default: return false;
  }
}

int64_t numel(const View& v) {
  int64_t n = 1;
  for (int64_t d : v.dims) n *= d > 0 ? d : 0;
  return n;
}

// Bytes from the view's element 0 up to its farthest element.
size_t reach(const View& v) {
  if (numel(v) == 0) return 0;
  int64_t last = v.offset;
  for (size_t i = 0; i < v.dims.size(); ++i) last += (v.dims[i] - 1) * v.strides[i];
  return static_cast<size_t>(last + 1) * opgate::dtype_size(v.dtype);
}

// Calls f(host element index, device byte offset) for every element, row-major.
template <class F>
void for_each_element(const View& v, F f) {
  const int64_t n = numel(v);
  std::vector<int64_t> idx(v.dims.size(), 0);
  const size_t size = opgate::dtype_size(v.dtype);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t e = v.offset;
    for (size_t i = 0; i < idx.size(); ++i) e += idx[i] * v.strides[i];
    f(static_cast<size_t>(flat) * size, static_cast<size_t>(e) * size);
    for (size_t i = idx.size(); i-- > 0;) {
      if (++idx[i] < v.dims[i]) break;
      idx[i] = 0;
    }
  }
}

std::string gather(const View& v, opgate::Tensor& out) {
  out = opgate::Tensor::zeros(v.dtype, v.dims);
  if (numel(v) == 0) return "";
  if (v.data == nullptr || !device_range(v.data, reach(v))) {
    return fmt::format("'{}': its device memory was freed, or is too small, when the kernel ran", v.name);
  }
  const size_t size = opgate::dtype_size(v.dtype);
  for_each_element(v, [&](size_t host, size_t dev) { std::memcpy(out.data() + host, v.data + dev, size); });
  return "";
}

void scatter(const View& v, const opgate::Tensor& t) {
  const size_t size = opgate::dtype_size(v.dtype);
  for_each_element(v, [&](size_t host, size_t dev) { std::memcpy(v.data + dev, t.data() + host, size); });
}

// The device kernel: gather, emulate, scatter, then any injected misbehaviour.
std::string run_kernel(const std::vector<View>& views, const Kernel& kernel) {
  // OPGATE_STANDIN_CRASH=1: the launch takes the host process down, as a driver fault can.
  if (env("OPGATE_STANDIN_CRASH") == "1") {
    trace("kernel crashed the process (SIGSEGV)");
    std::raise(SIGSEGV);
  }
  opgate::TensorMap in, out;
  for (const View& v : views) {
    if (std::string why = gather(v, v.output ? out[v.name] : in[v.name]); !why.empty()) return why;
  }
  const opgate::Status st = kernel(in, out);
  if (!st.is_ok()) return "emulator: " + st.message();
  for (const View& v : views) {
    if (!v.output) continue;
    const opgate::Tensor& t = out.at(v.name);
    if (t.dtype() != v.dtype || t.nbytes() != opgate::Tensor::zeros(v.dtype, v.dims).nbytes()) {
      return fmt::format("emulator output '{}' changed shape", v.name);
    }
    scatter(v, t);
  }
  // OPGATE_STANDIN_OOB: the first output also gets bytes written outside it, as a kernel would
  //   after   one byte just past its end (inside the slack CANN allows: a warning)
  //   before  one byte just before its start (an error)
  //   block   every byte from its end to ALIGN_UP(len, 32) + 32, as a kernel moving whole 32-byte
  //           blocks at an unaligned tail does (the whole slack: a warning)
  //   beyond  one byte at ALIGN_UP(len, 32) + 32, the first byte past the slack (an error)
  const std::string oob = env("OPGATE_STANDIN_OOB");
  for (const View& v : views) {
    if (!v.output || oob.empty()) continue;
    const size_t len = reach(v);
    const size_t slack_end = (len + 31) / 32 * 32 + 32;
    size_t first = len, count = 1;
    uint8_t* base = v.data;
    if (oob == "before") {
      base = v.data + v.offset * static_cast<int64_t>(opgate::dtype_size(v.dtype)) - 1;
      first = 0;
    } else if (oob == "block") {
      count = slack_end - len;
    } else if (oob == "beyond") {
      first = slack_end;
    }
    if (device_range(base + first, count)) {
      for (size_t i = 0; i < count; ++i) base[first + i] = static_cast<uint8_t>(~base[first + i]);
    }
    trace(fmt::format("kernel wrote {} byte(s) {} output '{}' of {} bytes (at byte {})", count, oob, v.name, len,
                      oob == "before" ? -1 : static_cast<int64_t>(first)));
    break;
  }
  // OPGATE_STANDIN_CORRUPT_INPUT=1: the kernel scribbles on its first non-empty input.
  if (env("OPGATE_STANDIN_CORRUPT_INPUT") == "1") {
    for (const View& v : views) {
      if (v.output || numel(v) == 0) continue;
      v.data[v.offset * static_cast<int64_t>(opgate::dtype_size(v.dtype))] ^= 0xFF;
      trace(fmt::format("kernel modified input '{}'", v.name));
      break;
    }
  }
  return "";
}

}  // namespace

void OpCall::add(const std::string& name, const aclTensor* t, bool output) {
  if (t == nullptr) {
    opgate::TensorSpec absent;
    absent.present = false;
    specs_[name] = absent;
    attrs_ += " " + name + "=NULL";
    return;
  }
  opgate::DType dtype = opgate::DType::kF32;
  if (!is_live(Kind::kTensor, t)) {
    if (problem_.empty()) problem_ = fmt::format("'{}' is not a live aclTensor", name);
    return;
  }
  if (!dtype_of(t->dtype, dtype)) {
    if (problem_.empty()) problem_ = fmt::format("'{}' has aclDataType {}, which opgate never passes", name, t->dtype);
    return;
  }
  specs_[name] = opgate::TensorSpec{dtype, t->dims, true};
  views_.push_back(View{name, dtype, t->dims, t->strides, t->offset, static_cast<uint8_t*>(t->data), output});
  attrs_ += fmt::format(" {}={}{}", name, opgate::dtype_name(dtype), shape_text(t->dims));
}

void OpCall::input_list(const std::string& name, const aclTensorList* l) {
  if (l == nullptr) {
    attrs_ += " " + name + "=NULL";
    return;
  }
  if (!is_live(Kind::kTensorList, l)) {
    if (problem_.empty()) problem_ = fmt::format("'{}' is not a live aclTensorList", name);
    return;
  }
  attrs_ += fmt::format(" {}=list({})", name, l->tensors.size());
  for (size_t i = 0; i < l->tensors.size(); ++i) add(fmt::format("{}.{}", name, i), l->tensors[i], false);
}

std::vector<int64_t> OpCall::int_array(const std::string& name, const aclIntArray* a, bool* present) {
  if (present != nullptr) *present = a != nullptr;
  if (a == nullptr) {
    attrs_ += " " + name + "=NULL";
    return {};
  }
  if (!is_live(Kind::kIntArray, a)) {
    if (problem_.empty()) problem_ = fmt::format("'{}' is not a live aclIntArray", name);
    return {};
  }
  attrs_ += fmt::format(" {}={}", name, shape_text(a->values));
  return a->values;
}

aclnnStatus OpCall::check() {
  const std::string first = op_ + "GetWorkspaceSize";
  if (require_context(first.c_str(), true) != 0) return 361001;  // ACLNN_ERR_RUNTIME_ERROR
  if (auto code = injected_failure(first.c_str(), opgate::acl::kAclnnInner)) return *code;
  const State& s = state();
  if (s.ctx_deterministic != 1 || s.process_deterministic != 1) {
    set_error(fmt::format("stand-in: {} with ACL_OPT_DETERMINISTIC = {} (context) / {} (process); opgate must "
                          "enable deterministic computation before the first aclnn call",
                          first, s.ctx_deterministic, s.process_deterministic));
    return opgate::acl::kAclnnInner;
  }
  if (!problem_.empty()) {
    set_error(fmt::format("stand-in: {}: {}", first, problem_));
    trace(first + " invalid: " + problem_);
    return opgate::acl::kAclnnParamInvalid;
  }
  return 0;
}

aclnnStatus OpCall::reject(const opgate::Status& st, uint64_t* workspace_size, aclOpExecutor** executor) {
  if (env("OPGATE_STANDIN_LENIENT") == "1") {
    trace(fmt::format("{}GetWorkspaceSize accepts an invalid call (lenient): {}", op_, st.message()));
    return accept(workspace_size, executor, [](const opgate::TensorMap&, opgate::TensorMap&) {
      return opgate::internal_error("the lenient stand-in ran an invalid call");
    });
  }
  const aclnnStatus code = st.code() == opgate::StatusCode::kAclnnError ? static_cast<aclnnStatus>(st.aclnn_code())
                                                                        : opgate::acl::kAclnnParamInvalid;
  set_error(fmt::format("stand-in: {}GetWorkspaceSize rejects the call: {}", op_, st.message()));
  trace(fmt::format("{}GetWorkspaceSize{} -> {}", op_, attrs_, code));
  return code;
}

aclnnStatus OpCall::accept(uint64_t* workspace_size, aclOpExecutor** executor, Kernel kernel) {
  if (workspace_size == nullptr || executor == nullptr) {
    set_error(fmt::format("stand-in: {}GetWorkspaceSize with a NULL workspaceSize or executor", op_));
    return opgate::acl::kAclnnParamNullptr;
  }
  auto* e = new aclOpExecutor();
  e->op = op_;
  e->workspace = std::strtoull(env("OPGATE_STANDIN_WORKSPACE", "65536").c_str(), nullptr, 10);
  for (const View& v : views_) {
    if (v.output && numel(v) > 0) e->writes.emplace_back(v.data + v.offset * static_cast<int64_t>(opgate::dtype_size(v.dtype)), reach(v));
  }
  e->kernel = [views = views_, kernel = std::move(kernel)]() { return run_kernel(views, kernel); };
  add_object(Kind::kExecutor, e);
  *workspace_size = e->workspace;
  *executor = e;
  trace(fmt::format("{}GetWorkspaceSize{} -> 0 workspace={}", op_, attrs_, e->workspace));
  return 0;
}

aclnnStatus launch(const char* op, void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                   aclrtStream stream) {
  if (require_context(op, true) != 0) return 361001;
  if (auto code = injected_failure(op, 361001)) return *code;
  auto bad = [op](const std::string& why) {
    set_error(fmt::format("stand-in: {}: {}", op, why));
    trace(fmt::format("{} invalid: {}", op, why));
    return opgate::acl::kAclnnParamInvalid;
  };
  if (!is_live(Kind::kExecutor, executor)) return bad("the executor is unknown or was already consumed");
  if (executor->op != op) return bad("the executor belongs to " + executor->op);
  if (workspace_size != executor->workspace) {
    return bad(fmt::format("workspaceSize {} differs from the {} the first phase returned", workspace_size,
                           executor->workspace));
  }
  if (workspace_size > 0 && !device_range(workspace, workspace_size)) {
    return bad(fmt::format("the workspace is not {} bytes of device memory", workspace_size));
  }
  if (!is_live(Kind::kStream, stream)) return bad("unknown stream");
  aclOpExecutor job;
  job.op = op;
  job.writes = executor->writes;
  if (workspace_size > 0) job.writes.emplace_back(workspace, workspace_size);
  job.kernel = [body = executor->kernel, workspace, workspace_size]() -> std::string {
    if (workspace_size > 0) {
      if (!device_range(workspace, workspace_size)) return "the workspace was freed before the kernel ran";
      std::memset(workspace, 0x5E, workspace_size);
    }
    return body();
  };
  enqueue(stream, std::move(job));
  if (!executor->repeatable) {
    remove_object(Kind::kExecutor, executor);
    delete executor;
  }
  trace(fmt::format("{} launched workspace={}", op, workspace_size));
  return 0;
}

bool read_device(uint64_t address, size_t bytes, std::vector<uint8_t>& out, std::string& why) {
  const auto* p = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(address));
  if (!device_range(p, bytes)) {
    why = fmt::format("0x{:x} + {} bytes is not device memory", address, bytes);
    return false;
  }
  out.assign(p, p + bytes);
  return true;
}

bool write_device(uint64_t address, const uint8_t* bytes, size_t n, std::string& why) {
  auto* p = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(address));
  if (!device_range(p, n)) {
    why = fmt::format("0x{:x} + {} bytes is not device memory", address, n);
    return false;
  }
  std::memcpy(p, bytes, n);
  return true;
}

}  // namespace standin
