// Random 5-op sequence (MLIR-RL dataset style): matmul (128x256 @ 256x128) -> add -> relu -> matmul (@ 128x64) -> sigmoid.
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%arg0: tensor<128x256xf32>, %arg1: tensor<256x128xf32>, %arg2: tensor<128x128xf32>, %arg3: tensor<128x64xf32>) -> tensor<128x64xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %cst_1 = arith.constant 1.000000e+00 : f32
  %0 = tensor.empty() : tensor<128x128xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<128x256xf32>, tensor<256x128xf32>) outs(%1 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %3 = tensor.empty() : tensor<128x128xf32>
  %4 = linalg.add ins(%2, %arg2 : tensor<128x128xf32>, tensor<128x128xf32>) outs(%3 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %5 = tensor.empty() : tensor<128x128xf32>
  %6 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<128x128xf32>) outs(%5 : tensor<128x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %13 = arith.maximumf %in, %cst : f32
    linalg.yield %13 : f32
  } -> tensor<128x128xf32>
  %7 = tensor.empty() : tensor<128x64xf32>
  %8 = linalg.fill ins(%cst : f32) outs(%7 : tensor<128x64xf32>) -> tensor<128x64xf32>
  %9 = linalg.matmul ins(%6, %arg3 : tensor<128x128xf32>, tensor<128x64xf32>) outs(%8 : tensor<128x64xf32>) -> tensor<128x64xf32>
  %10 = tensor.empty() : tensor<128x64xf32>
  %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%9 : tensor<128x64xf32>) outs(%10 : tensor<128x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %13 = arith.negf %in : f32
    %14 = math.exp %13 : f32
    %15 = arith.addf %14, %cst_1 : f32
    %16 = arith.divf %cst_1, %15 : f32
    linalg.yield %16 : f32
  } -> tensor<128x64xf32>
  return %11 : tensor<128x64xf32>
}
