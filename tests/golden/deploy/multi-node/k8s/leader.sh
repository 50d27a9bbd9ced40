#!/bin/bash
# LeaderWorkerSet leader: start the group's TensorRT-LLM ranks with mpirun over SSH; rank 0 (here) serves Triton.
# LWS_LEADER_ADDRESS (<set>-<group>.<subdomain>.<namespace>) and LWS_GROUP_SIZE are set by the LeaderWorkerSet
# controller (kubernetes-sigs/lws v0.9.0 pkg/utils/pod/pod_utils.go); worker i is <set>-<group>-<i>.<subdomain>.
set -euo pipefail
readonly gpus_per_pod=8 world=16 port=2222
install -d -m 700 /root/.ssh
install -m 600 /etc/specdeploy/ssh/id_ed25519 /root/.ssh/id_ed25519
install -m 600 /etc/specdeploy/ssh/authorized_keys /root/.ssh/authorized_keys
ssh-keygen -A
/usr/sbin/sshd -p "${port}"
leader="${LWS_LEADER_ADDRESS:?set by the LeaderWorkerSet controller}"
size="${LWS_GROUP_SIZE:?set by the LeaderWorkerSet controller}"
first="${leader%%.*}"
domain="${leader#*.}"
hosts="${leader}:${gpus_per_pod}"
for ((i = 1; i < size; i++)); do
  worker="${first}-${i}.${domain}"
  until ssh -p "${port}" -o StrictHostKeyChecking=no -o BatchMode=yes "${worker}" true; do
    echo "waiting for ${worker} ..." >&2
    sleep 5
  done
  hosts="${hosts},${worker}:${gpus_per_pod}"
done
forward=(-x HF_HOME)
if [[ -n "${HF_TOKEN:-}" ]]; then  # the Secret is optional: forward the token only when it is there
  forward+=(-x HF_TOKEN)
fi
exec mpirun --allow-run-as-root -np "${world}" --host "${hosts}" \
  --mca plm_rsh_args "-p ${port} -o StrictHostKeyChecking=no" \
  "${forward[@]}" \
  trtllm-llmapi-launch /opt/tritonserver/bin/tritonserver --model-repository=/opt/specdeploy/triton
