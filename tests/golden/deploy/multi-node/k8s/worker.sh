#!/bin/bash
# LeaderWorkerSet worker: serve SSH so the leader's mpirun can start this pod's ranks (trtllm-llmapi-launch
# runs them as TensorRT-LLM workers); nothing here listens for requests.
set -euo pipefail
readonly port=2222
install -d -m 700 /root/.ssh
install -m 600 /etc/specdeploy/ssh/authorized_keys /root/.ssh/authorized_keys
ssh-keygen -A
exec /usr/sbin/sshd -D -e -p "${port}"
