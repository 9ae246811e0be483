# minimod-gpu with the CUDA backend. Build:  docker build -t minimod-gpu .
# (other GPUs: --build-arg CUDA_ARCHITECTURES=80). Run:
#   docker run --rm --gpus all -v "$PWD:/work" -w /work minimod-gpu run input/demo.yaml
FROM nvidia/cuda:13.0.0-devel-ubuntu24.04

ARG CUDA_ARCHITECTURES=90
# The host code's vector level (MINIMOD_CPU_ARCH): a portable one, since the image moves between
# machines; `--build-arg CPU_ARCH=native` for an image built where it runs.
ARG CPU_ARCH=x86-64-v3
# The commit to bake into the binary when the build context has no .git (docker build
# --build-arg GIT_COMMIT=$(git rev-parse --short=12 HEAD) .)
ARG GIT_COMMIT=
ARG DEBIAN_FRONTEND=noninteractive

RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      cmake g++ make libhdf5-dev hdf5-tools libyaml-cpp-dev libcli11-dev \
      libopenmpi-dev openmpi-bin googletest libgtest-dev python3-h5py python3-numpy \
      libsegyio-dev nlohmann-json3-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/minimod-gpu
COPY . .
RUN rm -rf build \
 && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DMINIMOD_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES} -DMINIMOD_GIT_COMMIT=${GIT_COMMIT} \
      -DMINIMOD_CPU_ARCH=${CPU_ARCH} \
 && cmake --build build -j"$(nproc)"

ENTRYPOINT ["/opt/minimod-gpu/build/minimod-gpu"]
