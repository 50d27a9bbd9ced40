#!/bin/bash
# Rendered by specdeploy: 2 node(s) x 8 GPU(s), one MPI rank per GPU
# (tensor_parallel 8 x pipeline_parallel 2); rank 0 serves Triton on its node.
# Launch as NVIDIA documents it (tensorrtllm_backend docs/llmapi.md): srun --mpi=pmix ... trtllm-llmapi-launch
# tritonserver. Containers through pyxis (--container-image). Submit: HF_TOKEN=... sbatch deploy/slurm/sbatch.sh
#SBATCH --job-name=h200-mtp-deepseek-v3-2node
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --time=04:00:00
set -euo pipefail
readonly image=h200-mtp-deepseek-v3-2node:specdeploy
readonly model_cache=/mnt/models
export HF_HOME=/models/hf
srun --mpi=pmix \
  --container-image="${image}" \
  --container-mounts="${model_cache}:/models" \
  --export=ALL \
  trtllm-llmapi-launch /opt/tritonserver/bin/tritonserver --model-repository=/opt/specdeploy/triton
