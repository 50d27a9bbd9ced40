#!/usr/bin/env bash
# The benchmark clients bench/serving.py drives, in a virtualenv of their own so that their dependencies never
# reach the project's: AIPerf (the OpenAI chat endpoint) and perf_analyzer, from the tritonclient 2.51.0 wheel
# (the 2.60 wheels need glibc 2.38; Debian 12 has 2.36). perf_analyzer also loads libb64.so.0d (Debian's
# libb64-0d) and libcudart.so.12 (the nvidia-cuda-runtime-cu12 wheel; bench/serving.py puts it on its
# library path). Usage: bench/clients.sh [VENV]  (default: $SPECDEPLOY_CACHE/bench-clients)
set -euo pipefail
VENV=${1:-${SPECDEPLOY_CACHE:-$HOME/.cache/specdeploy}/bench-clients}
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q 'aiperf==0.13.0' 'tritonclient==2.51.0' 'nvidia-cuda-runtime-cu12'
if ! ldconfig -p | grep -q 'libb64.so.0d'; then
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q libb64-0d >/dev/null
  else echo "perf_analyzer needs libb64.so.0d: sudo apt-get install libb64-0d" >&2; exit 1; fi
fi
echo "$VENV"
