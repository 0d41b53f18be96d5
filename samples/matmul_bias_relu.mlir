// Fully-connected layer as a producer-consumer chain: fill -> matmul (256x512 @ 512x256) -> bias add (broadcast along rows) -> ReLU.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map_bias = affine_map<(d0, d1) -> (d1)>
func.func @forward(%arg0: tensor<256x512xf32>, %arg1: tensor<512x256xf32>, %arg2: tensor<256xf32>) -> tensor<256x256xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<256x256xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<256x256xf32>) -> tensor<256x256xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<256x512xf32>, tensor<512x256xf32>) outs(%1 : tensor<256x256xf32>) -> tensor<256x256xf32>
  %3 = tensor.empty() : tensor<256x256xf32>
  %4 = linalg.generic {indexing_maps = [#map, #map_bias, #map], iterator_types = ["parallel", "parallel"]} ins(%2, %arg2 : tensor<256x256xf32>, tensor<256xf32>) outs(%3 : tensor<256x256xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %7 = arith.addf %in, %in_0 : f32
    linalg.yield %7 : f32
  } -> tensor<256x256xf32>
  %5 = tensor.empty() : tensor<256x256xf32>
  %6 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<256x256xf32>) outs(%5 : tensor<256x256xf32>) {
  ^bb0(%in: f32, %out: f32):
    %7 = arith.maximumf %in, %cst : f32
    linalg.yield %7 : f32
  } -> tensor<256x256xf32>
  return %6 : tensor<256x256xf32>
}
