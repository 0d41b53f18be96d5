// ReLU max(x, 0) on a 512x1024 f32 tensor, as a linalg.generic.
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%arg0: tensor<512x1024xf32>) -> tensor<512x1024xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<512x1024xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<512x1024xf32>) outs(%0 : tensor<512x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %2 = arith.maximumf %in, %cst : f32
    linalg.yield %2 : f32
  } -> tensor<512x1024xf32>
  return %1 : tensor<512x1024xf32>
}
