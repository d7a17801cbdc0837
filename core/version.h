// The harness version recorded in reports, baselines and golden manifests: "<version>+g<git rev>",
// with "-dirty" when tracked files differ from the commit. Generated at build time.
#pragma once

namespace opgate {

const char* harness_version();

}  // namespace opgate
