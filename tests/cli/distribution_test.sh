#!/usr/bin/env bash
# The scheduler examples of docs/distribution/ (GitLab CI parallel, Kubernetes Indexed Job), run as
# the schedulers would run them, merged, and compared with the unsharded run: distribution_test.py.
# Usage: distribution_test.sh <opgate binary> <source dir> <scratch dir>
exec python3 -B "$(dirname "$0")/distribution_test.py" "$@"
