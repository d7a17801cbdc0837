// CPU emulation of the A2 aclnnIncreFlashAttentionV3 kernel (attention-and-ffn.md §1.4.3-§1.4.7):
// fp32 QK, online softmax over S2 tiles, P rounded (or MSD-decomposed for int8 KV) before an fp32
// PV, flash-decode split and combine, output cast or quantisation; plus the defect catalogue the
// fault backend injects.
#pragma once

#include <string>
#include <vector>

#include "core/defect.h"
#include "core/status.h"
#include "core/tensor.h"
#include "device/emu/emu_backend.h"
#include "reference/incre_flash_attention_v3.h"

namespace opgate::emu::incre_flash_attention_v3 {

// Runs the kernel model on the packed images `in` (names as in ref::specs) and writes every element
// of the pre-allocated out["attentionOut"]. `defect` is "" (faithful) or a name from defects().
// A read outside a KV image (only defects do that) yields NaN, as garbage memory would.
Status run(const ref::incre_flash_attention_v3::Params& p, const TensorMap& in, TensorMap& out,
           const std::string& defect);

// run() over the given KV windows (one per batch, ref::KvWindow: positions [start, start + length) of
// the canonical KV axis, attenMask and pseShift read from aux_start): the tiles and flash-decode
// splits walk the window as they walk [0, L_b). run(p, in, out, d) == run_window(p, in, out, d,
// ref::full_windows(p)).
Status run_window(const ref::incre_flash_attention_v3::Params& p, const TensorMap& in, TensorMap& out,
                  const std::string& defect, const std::vector<ref::incre_flash_attention_v3::KvWindow>& windows);

// The injectable defects, each named "ifa.<what>" with a one-line description.
std::vector<DefectInfo> defects();

// The kernel templates (tiling SetupPerfMode) whose schedule the emulator models: the C+V template
// (perfMode NORMAL) and the all-vector template (BMM_ALL_BY_VEC; P cast RNE).
enum class Template { kCubeVector, kAllVector };

// The template the kernel runs for `p`, except that a problem of the cube-view template
// (runs_cube_view) is run as C+V.
Template kernel_template(const ref::incre_flash_attention_v3::Params& p);

// Whether a device would run the cube-view template (CUBE_VIEW_MM, Preload, perfMode 3: split when
// B·N2 <= 0.5·AIC cores, 2048-position int8 tiles for G > 1), which the emulator does not model.
// The generator never makes such a problem (B·N2 <= 15, L <= 300); see the README's audit section.
bool runs_cube_view(const ref::incre_flash_attention_v3::Params& p);

// The kernel's schedule for a problem (§1.4.7) on a chip: S2 tile length and the flash-decode
// split length (0 = no split) and count. Exposed so tests can pick problems with identical schedules.
struct Schedule {
  Template kernel = Template::kCubeVector;
  int64_t tile = 0;
  int64_t split_len = 0;
  int64_t parts = 1;  // splits of the longest row
};
Schedule schedule(const ref::incre_flash_attention_v3::Params& p, const Soc& chip);
// On the chip the emulator plays (emu::soc(), OPGATE_EMU_SOC).
Schedule schedule(const ref::incre_flash_attention_v3::Params& p);

namespace detail {
// float(round_to(t, x, r)) for t = fp16 or bf16 (the cast of P before the PV product): a carry on
// the fp32 bits where x is a normal number of t far from overflow, round_to elsewhere. Declared for
// its test.
float cast_p(float x, DType t, Rounding r);
}  // namespace detail

}  // namespace opgate::emu::incre_flash_attention_v3
