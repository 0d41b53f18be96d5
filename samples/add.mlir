// Elementwise addition of two 512x1024 f32 tensors (linalg.add).
func.func @forward(%arg0: tensor<512x1024xf32>, %arg1: tensor<512x1024xf32>) -> tensor<512x1024xf32> {
  %0 = tensor.empty() : tensor<512x1024xf32>
  %1 = linalg.add ins(%arg0, %arg1 : tensor<512x1024xf32>, tensor<512x1024xf32>) outs(%0 : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  return %1 : tensor<512x1024xf32>
}
