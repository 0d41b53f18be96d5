#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>
#map2 = affine_map<(d0, d1) -> (d1)>
module {
  func.func @forward(%arg0: tensor<16x64xf32>) -> tensor<16x64xf32> {
    %cst = arith.constant 0.000000e+00 : f64
    %cst_0 = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant 1.000000e+00 : f32
    %cst_2 = arith.constant 5.000000e-01 : f32
    %cst_3 = arith.constant dense_resource<torch_tensor_64_torch.float32_1> : tensor<64xf32>
    %cst_4 = arith.constant dense_resource<torch_tensor_64_torch.float32> : tensor<64xf32>
    %cst_5 = arith.constant 1.000000e-05 : f64
    %cst_6 = arith.constant 6.400000e+01 : f64
    %cst_7 = arith.constant 6.400000e+01 : f32
    %cst_8 = arith.constant 1.41421354 : f32
    %0 = tensor.empty() : tensor<16x64xf64>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<16x64xf32>) outs(%0 : tensor<16x64xf64>) {
    ^bb0(%in: f32, %out: f64):
      %23 = arith.extf %in : f32 to f64
      linalg.yield %23 : f64
    } -> tensor<16x64xf64>
    %2 = tensor.empty() : tensor<16x1xf64>
    %3 = linalg.fill ins(%cst : f64) outs(%2 : tensor<16x1xf64>) -> tensor<16x1xf64>
    %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%1 : tensor<16x64xf64>) outs(%3 : tensor<16x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %23 = arith.addf %in, %out : f64
      linalg.yield %23 : f64
    } -> tensor<16x1xf64>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<16x1xf64>) outs(%2 : tensor<16x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %23 = arith.divf %in, %cst_6 : f64
      linalg.yield %23 : f64
    } -> tensor<16x1xf64>
    %6 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%1, %5 : tensor<16x64xf64>, tensor<16x1xf64>) outs(%0 : tensor<16x64xf64>) {
    ^bb0(%in: f64, %in_9: f64, %out: f64):
      %23 = arith.subf %in, %in_9 : f64
      linalg.yield %23 : f64
    } -> tensor<16x64xf64>
    %7 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%6, %6 : tensor<16x64xf64>, tensor<16x64xf64>) outs(%0 : tensor<16x64xf64>) {
    ^bb0(%in: f64, %in_9: f64, %out: f64):
      %23 = arith.mulf %in, %in_9 : f64
      linalg.yield %23 : f64
    } -> tensor<16x64xf64>
    %8 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%7 : tensor<16x64xf64>) outs(%3 : tensor<16x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %23 = arith.addf %in, %out : f64
      linalg.yield %23 : f64
    } -> tensor<16x1xf64>
    %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%8 : tensor<16x1xf64>) outs(%2 : tensor<16x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %23 = arith.divf %in, %cst_6 : f64
      linalg.yield %23 : f64
    } -> tensor<16x1xf64>
    %10 = tensor.empty() : tensor<16x1xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%9 : tensor<16x1xf64>) outs(%10 : tensor<16x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %23 = arith.truncf %in : f64 to f32
      linalg.yield %23 : f32
    } -> tensor<16x1xf32>
    %12 = linalg.fill ins(%cst_0 : f32) outs(%10 : tensor<16x1xf32>) -> tensor<16x1xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<16x64xf32>) outs(%12 : tensor<16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %23 = arith.addf %in, %out : f32
      linalg.yield %23 : f32
    } -> tensor<16x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%13 : tensor<16x1xf32>) outs(%10 : tensor<16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %23 = arith.divf %in, %cst_7 : f32
      linalg.yield %23 : f32
    } -> tensor<16x1xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%11 : tensor<16x1xf32>) outs(%10 : tensor<16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %23 = arith.truncf %cst_5 : f64 to f32
      %24 = arith.addf %in, %23 : f32
      linalg.yield %24 : f32
    } -> tensor<16x1xf32>
    %16 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%15 : tensor<16x1xf32>) outs(%10 : tensor<16x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %23 = math.rsqrt %in : f32
      linalg.yield %23 : f32
    } -> tensor<16x1xf32>
    %17 = tensor.empty() : tensor<16x64xf32>
    %18 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %14 : tensor<16x64xf32>, tensor<16x1xf32>) outs(%17 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %in_9: f32, %out: f32):
      %23 = arith.subf %in, %in_9 : f32
      linalg.yield %23 : f32
    } -> tensor<16x64xf32>
    %19 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%18, %16 : tensor<16x64xf32>, tensor<16x1xf32>) outs(%17 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %in_9: f32, %out: f32):
      %23 = arith.mulf %in, %in_9 : f32
      linalg.yield %23 : f32
    } -> tensor<16x64xf32>
    %20 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%19, %cst_4 : tensor<16x64xf32>, tensor<64xf32>) outs(%17 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %in_9: f32, %out: f32):
      %23 = arith.mulf %in, %in_9 : f32
      linalg.yield %23 : f32
    } -> tensor<16x64xf32>
    %21 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%20, %cst_3 : tensor<16x64xf32>, tensor<64xf32>) outs(%17 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %in_9: f32, %out: f32):
      %23 = arith.addf %in, %in_9 : f32
      linalg.yield %23 : f32
    } -> tensor<16x64xf32>
    %22 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%21 : tensor<16x64xf32>) outs(%17 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %23 = arith.divf %in, %cst_8 : f32
      %24 = math.erf %23 : f32
      %25 = arith.addf %24, %cst_1 : f32
      %26 = arith.mulf %25, %cst_2 : f32
      %27 = arith.mulf %in, %26 : f32
      linalg.yield %27 : f32
    } -> tensor<16x64xf32>
    return %22 : tensor<16x64xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      torch_tensor_64_torch.float32_1: "0x04000000325DA1BE20B9083ED4BD0ABEAE18B7BE5498A63E84E0E2BED08353BEFAD0823E905C463E2C84953ED0DBAD3D56F8E1BEF0D1053EAA3AE3BE08F3FEBE7C02F93EF027223D6E0DA3BEF042FB3E14DE55BE6871CCBE442F6D3EAE99D53E301572BE6EF8AE3EC4AD66BEE873DABDBEE2973EE8D0483EFAA9C33E445B28BE7A81913E16999D3E806952BE2C2BEDBEF0DC2A3D64BE383EE2A6D7BE7E09D9BEBAE4CB3E00C2933CC6DFACBE7012FF3EC8F2DC3E8CD646BE0038DE3C86C38BBEDCDB1B3E4E528D3EAC16B63E04CAE93E284B9A3DA082BCBE0416F5BE98D8CB3D1C1B6A3EE45898BE205E093DC408DFBE0C762B3E2869293E1013FABE50FC07BED413D8BE",
      torch_tensor_64_torch.float32: "0x04000000724CA33FA3FD313FF0BE483F1EF68E3F6B1FA13FE0F5013FDC7E963FE069593F11327B3F268C8E3F93C9163FAA93863FF752143F751D8B3F44921C3F5872073FACAC993F813B103FC43DAD3F1523823F25F2BA3F019F733F8B2F993F99BC853FE4A7BB3F89F23A3F6E38853FFB1E253F960F9E3FBEE7BD3FE98C323F2E07103FCA57933FFA98763F349A8B3FC5516E3F2DAC9C3F0841683F395A7F3F2CB4503F2A0E983F48B2913F4265B33FE7C3A63FB0788B3F2569743F9BF6743FDECF3E3F1E26B23F3CC3293F5E76BC3FBAF9483FB898393FE32D813FCC3C5F3F4B86243F9BCC623F3A41A13F6888813F696DBE3F680A913F04BB2F3F103A223F7B43423F"
    }
  }
#-}
