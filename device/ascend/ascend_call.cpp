// The shared half of every aclnn call: argument marshalling into device memory, the two-phase
// launch on the session's stream, and the copies back with device-side guard checks.
#include "device/ascend/ascend_call.h"

#include <algorithm>

#include <fmt/format.h>

namespace opgate::ascend {
namespace {

// Position-dependent guard bytes, so a stray memset of a constant never looks intact.
uint8_t guard_byte(size_t i) { return static_cast<uint8_t>(0xC3 ^ (i * 17)); }

// Device memory is never allocated empty: an empty tensor still gets a valid, aligned address.
constexpr size_t kMinAllocation = acl::kTensorAlignment;

size_t spec_bytes(const TensorSpec& s) {
  int64_t n = 1;
  for (int64_t d : s.shape) n = d < 0 ? 0 : n * d;
  return static_cast<size_t>(n) * dtype_size(s.dtype);
}

}  // namespace

CallArgs::CallArgs(const AclApi& api, const ResolvedEntry& entry, const SpecMap& specs, const TensorMap* inputs,
                   TensorMap* outputs)
    : api_(api), entry_(entry), specs_(specs), inputs_(inputs), outputs_(outputs) {
  if (outputs_ == nullptr || inputs_ == nullptr) return;
  // Buffers the kernel updates in place are outputs that start as the input image.
  for (auto& [name, out] : *outputs_) {
    const auto in = inputs_->find(name);
    if (in == inputs_->end()) continue;
    if (in->second.nbytes() != out.nbytes()) {
      fail(internal_error(fmt::format("image '{}' is {} bytes as input and {} bytes as output", name,
                                      in->second.nbytes(), out.nbytes())));
      return;
    }
    std::copy_n(in->second.data(), out.nbytes(), out.data());
  }
}

void CallArgs::fail(Status st) {
  if (status_.is_ok()) status_ = std::move(st);
}

const TensorSpec* CallArgs::spec(const std::string& name) {
  const auto it = specs_.find(name);
  return it == specs_.end() ? nullptr : &it->second;
}

CallArgs::Image* CallArgs::image(const std::string& name) {
  if (auto it = images_.find(name); it != images_.end()) return &it->second;
  if (!status_.is_ok()) return nullptr;
  Image im;
  std::vector<uint8_t> staging;
  if (run_mode()) {
    const auto out = outputs_->find(name);
    const auto patched = patched_.find(name);
    const auto in = inputs_->find(name);
    if (out != outputs_->end()) {
      im.host = &out->second;
      im.output = true;
    } else if (patched != patched_.end()) {
      im.host = &patched->second;
    } else if (in != inputs_->end()) {
      im.host = &in->second;
    } else {
      fail(internal_error(fmt::format("{}: no packed image named '{}'", entry_.name, name)));
      return nullptr;
    }
    im.body_bytes = im.host->nbytes();
    if (im.output) {
      // Guard pattern | poisoned body | guard pattern: a write past the output lands in a guard.
      im.body_offset = kDeviceGuardBytes;
      staging.resize(im.body_bytes + 2 * kDeviceGuardBytes);
      for (size_t i = 0; i < kDeviceGuardBytes; ++i) {
        staging[i] = guard_byte(i);
        staging[kDeviceGuardBytes + im.body_bytes + i] = guard_byte(kDeviceGuardBytes + i);
      }
      std::copy_n(im.host->data(), im.body_bytes, staging.begin() + static_cast<ptrdiff_t>(kDeviceGuardBytes));
    } else {
      staging.assign(im.host->data(), im.host->data() + im.body_bytes);
    }
  } else {
    const TensorSpec* s = spec(name);
    if (s == nullptr) {
      fail(internal_error(fmt::format("{}: the call has no argument '{}'", entry_.name, name)));
      return nullptr;
    }
    im.body_bytes = spec_bytes(*s);
    staging.assign(im.body_bytes, 0);
  }
  auto buffer = DeviceBuffer::allocate(api_, std::max(staging.size(), kMinAllocation));
  if (!buffer) {
    fail(buffer.status().with_context(fmt::format("{}: '{}'", entry_.name, name)));
    return nullptr;
  }
  im.buffer = std::move(*buffer);
  Status st = im.buffer.upload(api_, 0, staging.data(), staging.size());
  if (!st.is_ok()) {
    fail(st.with_context(fmt::format("{}: '{}'", entry_.name, name)));
    return nullptr;
  }
  return &images_.emplace(name, std::move(im)).first->second;
}

const aclTensor* CallArgs::tensor(const std::string& name) {
  if (!status_.is_ok()) return nullptr;
  const TensorSpec* s = spec(name);
  if (s == nullptr) {
    fail(internal_error(fmt::format("{}: the call has no argument '{}'", entry_.name, name)));
    return nullptr;
  }
  if (!s->present) return nullptr;
  Image* im = image(name);
  if (im == nullptr) return nullptr;
  if (run_mode() && (im->host->dtype() != s->dtype || im->body_bytes != spec_bytes(*s))) {
    fail(internal_error(fmt::format("{}: image '{}' is {} {} but the call describes it as {} {}", entry_.name, name,
                                    dtype_name(im->host->dtype()), shape_to_string(im->host->shape()),
                                    dtype_name(s->dtype), shape_to_string(s->shape))));
    return nullptr;
  }
  auto t = create_tensor(api_, s->dtype, s->shape, static_cast<uint8_t*>(im->buffer.get()) + im->body_offset);
  if (!t) {
    fail(t.status().with_context(fmt::format("{}: '{}'", entry_.name, name)));
    return nullptr;
  }
  tensors_.push_back(std::move(*t));
  return tensors_.back().get();
}

const aclTensorList* CallArgs::tensor_list(const std::string& name) {
  if (!status_.is_ok()) return nullptr;
  // Members name.0, name.1, ... (an absent one is a NULL entry); a single argument `name` is a
  // list of one; the list itself is NULL when `name` is absent or nothing is present.
  std::vector<std::string> members;
  bool any = false;
  for (size_t i = 0; spec(fmt::format("{}.{}", name, i)) != nullptr; ++i) {
    members.push_back(fmt::format("{}.{}", name, i));
    any = any || spec(members.back())->present;
  }
  if (members.empty() && spec(name) != nullptr) {
    members.push_back(name);
    any = spec(name)->present;
  }
  if (!any) {
    if (members.empty()) fail(internal_error(fmt::format("{}: the call has no tensor list '{}'", entry_.name, name)));
    return nullptr;
  }
  std::vector<TensorHandle> handles;
  for (const auto& member : members) {
    if (!spec(member)->present) {
      handles.emplace_back();
      continue;
    }
    if (tensor(member) == nullptr) return nullptr;
    handles.push_back(std::move(tensors_.back()));
    tensors_.pop_back();
  }
  auto list = create_tensor_list(api_, handles);
  if (!list) {
    fail(list.status().with_context(fmt::format("{}: '{}'", entry_.name, name)));
    return nullptr;
  }
  lists_.push_back(std::move(*list));
  return lists_.back().get();
}

const aclIntArray* CallArgs::int_array(const std::vector<int64_t>& values) {
  if (!status_.is_ok()) return nullptr;
  auto a = create_int_array(api_, values);
  if (!a) {
    fail(a.status().with_context(entry_.name));
    return nullptr;
  }
  arrays_.push_back(std::move(*a));
  return arrays_.back().get();
}

uint64_t CallArgs::address(const std::string& name) {
  if (!run_mode() || (outputs_->count(name) == 0 && inputs_->count(name) == 0)) return 0;
  Image* im = image(name);
  if (im == nullptr) return 0;
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(im->buffer.get())) + im->body_offset;
}

Tensor* CallArgs::patch(const std::string& name) {
  if (!run_mode() || !status_.is_ok()) return nullptr;
  if (images_.count(name) != 0) {
    fail(internal_error(fmt::format("{}: image '{}' patched after its upload", entry_.name, name)));
    return nullptr;
  }
  if (auto out = outputs_->find(name); out != outputs_->end()) return &out->second;
  if (auto done = patched_.find(name); done != patched_.end()) return &done->second;
  const auto in = inputs_->find(name);
  if (in == inputs_->end()) return nullptr;
  return &patched_.emplace(name, in->second.clone()).first->second;
}

Status CallArgs::collect(std::vector<std::string>* warnings) {
  OPGATE_TRY(status_);
  for (const auto& [name, out] : *outputs_) {
    if (images_.count(name) == 0) {
      return internal_error(fmt::format("{}: output image '{}' was not passed to the call", entry_.name, name));
    }
  }
  for (auto& [name, im] : images_) {
    if (im.output) {
      std::vector<uint8_t> staging(im.body_bytes + 2 * kDeviceGuardBytes);
      OPGATE_TRY(im.buffer.download(api_, 0, staging.data(), staging.size()));
      // After the body: first the slack CANN allows a kernel to touch (a warning), then the guards.
      const size_t slack = device_slack_bytes(im.body_bytes);
      size_t before = 0, after = 0, first_after = 0, in_slack = 0, last_in_slack = 0;
      for (size_t i = 0; i < kDeviceGuardBytes; ++i) {
        before += staging[i] != guard_byte(i);
        if (staging[kDeviceGuardBytes + im.body_bytes + i] == guard_byte(kDeviceGuardBytes + i)) continue;
        if (i < slack) {
          ++in_slack;
          last_in_slack = i;
        } else if (after++ == 0) {
          first_after = i;
        }
      }
      if (before != 0 || after != 0) {
        std::string where;
        if (before != 0) where = fmt::format("{} guard byte(s) before it changed", before);
        if (after != 0) {
          where += fmt::format("{}{} guard byte(s) after it changed (first at byte {} past the end, beyond the {} "
                               "bytes ALIGN_UP(len, 32) + 32 allows)",
                               where.empty() ? "" : "; ", after, first_after, slack);
        }
        return Status(StatusCode::kBackendError, fmt::format("write outside output '{}' on the device: {}", name, where));
      }
      if (in_slack != 0 && warnings != nullptr) {
        warnings->push_back(fmt::format("output '{}' ({} bytes): the kernel changed {} of the {} bytes after its end "
                                        "that CANN lets it touch (ALIGN_UP(len, 32) + 32; last at byte {} past the end)",
                                        name, im.body_bytes, in_slack, slack, last_in_slack));
      }
      std::copy_n(staging.begin() + static_cast<ptrdiff_t>(kDeviceGuardBytes), im.body_bytes,
                  outputs_->at(name).data());
    } else {
      std::vector<uint8_t> back(im.body_bytes);
      OPGATE_TRY(im.buffer.download(api_, 0, back.data(), back.size()));
      const auto diff = std::mismatch(back.begin(), back.end(), im.host->data());
      if (diff.first != back.end()) {
        return Status(StatusCode::kBackendError,
                      fmt::format("the device modified input '{}' (first changed byte {} of {})", name,
                                  diff.first - back.begin(), back.size()));
      }
    }
  }
  return Status::ok();
}

Status run_call(DeviceSession& session, const AscendOp& op, const ResolvedEntry& entry, const Problem& problem,
                const TensorMap& inputs, TensorMap& outputs, std::vector<std::string>* warnings) {
  OPGATE_TRY(session.ensure());
  const AclApi& api = session.api();
  CallArgs args(api, entry, problem.specs(), &inputs, &outputs);
  const aclnnStatus rc = op.get_workspace_size(problem, args);
  OPGATE_TRY(args.status());
  if (!args.called()) return internal_error(fmt::format("{}: the marshalling did not call GetWorkspaceSize", entry.name));
  ExecutorHandle executor(&api, args.executor());
  if (rc != 0) {
    return Status(StatusCode::kBackendError,
                  "the device rejects a call the reference accepts: " +
                      failure_text(api, entry.name + "GetWorkspaceSize", rc),
                  rc);
  }
  DeviceBuffer workspace;
  if (args.workspace_size() > 0) {
    auto ws = DeviceBuffer::allocate(api, args.workspace_size());
    if (!ws) return ws.status().with_context(fmt::format("{}: workspace", entry.name));
    workspace = std::move(*ws);
  }
  AclnnLaunchFn launch = nullptr;
  std::memcpy(&launch, &entry.launch, sizeof(launch));
  const aclnnStatus launched = launch(workspace.get(), args.workspace_size(), executor.release(), session.stream());
  if (launched != 0) return call_failed(api, entry.name, launched);
  const aclError synced = api.aclrtSynchronizeStream(session.stream());
  if (synced != acl::kSuccess) return call_failed(api, "aclrtSynchronizeStream after " + entry.name, synced);
  return args.collect(warnings);
}

Expected<int64_t> probe_rejection(DeviceSession& session, const AscendOp& op, const ResolvedEntry& entry,
                                  const Problem& problem) {
  OPGATE_TRY(session.ensure());
  const AclApi& api = session.api();
  CallArgs args(api, entry, problem.specs(), nullptr, nullptr);
  const aclnnStatus rc = op.get_workspace_size(problem, args);
  OPGATE_TRY(args.status());
  if (!args.called()) return internal_error(fmt::format("{}: the marshalling did not call GetWorkspaceSize", entry.name));
  ExecutorHandle executor(&api, args.executor());
  // The runtime keeps the rejection's text until it is read; read it so it cannot leak into a later message.
  if (rc != 0) (void)failure_text(api, entry.name + "GetWorkspaceSize", rc);
  return static_cast<int64_t>(rc);
}

}  // namespace opgate::ascend
