// The translation unit egm_torch_pch compiles; its only product is the
// precompiled <torch/torch.h> other targets reuse (cmake/EgmDependencies.cmake).
