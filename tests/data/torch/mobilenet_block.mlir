#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
#map3 = affine_map<(d0, d1, d2, d3) -> ()>
module {
  func.func @forward(%arg0: tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 1.000000e+00 : f32
    %cst_1 = arith.constant dense<6.000000e+00> : tensor<f32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_3 = arith.constant dense_resource<torch_tensor_8_torch.float32_3> : tensor<8xf32>
    %cst_4 = arith.constant dense_resource<torch_tensor_8_torch.float32_2> : tensor<8xf32>
    %cst_5 = arith.constant dense_resource<torch_tensor_8_torch.float32_1> : tensor<8xf32>
    %cst_6 = arith.constant dense_resource<torch_tensor_8_torch.float32> : tensor<8xf32>
    %cst_7 = arith.constant dense_resource<torch_tensor_8_32_1_1_torch.float32> : tensor<8x32x1x1xf32>
    %cst_8 = arith.constant dense_resource<torch_tensor_32_torch.float32_7> : tensor<32xf32>
    %cst_9 = arith.constant dense_resource<torch_tensor_32_torch.float32_6> : tensor<32xf32>
    %cst_10 = arith.constant dense_resource<torch_tensor_32_torch.float32_5> : tensor<32xf32>
    %cst_11 = arith.constant dense_resource<torch_tensor_32_torch.float32_4> : tensor<32xf32>
    %cst_12 = arith.constant dense_resource<torch_tensor_32_1_3_3_torch.float32> : tensor<32x1x3x3xf32>
    %cst_13 = arith.constant dense_resource<torch_tensor_32_torch.float32_3> : tensor<32xf32>
    %cst_14 = arith.constant dense_resource<torch_tensor_32_torch.float32_2> : tensor<32xf32>
    %cst_15 = arith.constant 1.000000e-05 : f64
    %cst_16 = arith.constant dense_resource<torch_tensor_32_torch.float32_1> : tensor<32xf32>
    %cst_17 = arith.constant dense_resource<torch_tensor_32_torch.float32> : tensor<32xf32>
    %cst_18 = arith.constant dense_resource<torch_tensor_32_8_1_1_torch.float32> : tensor<32x8x1x1xf32>
    %0 = tensor.empty() : tensor<1x32x16x16xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%arg0, %cst_18 : tensor<1x8x16x16xf32>, tensor<32x8x1x1xf32>) outs(%1 : tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32>
    %3 = tensor.empty() : tensor<32xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%cst_16 : tensor<32xf32>) outs(%3 : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %35 = arith.truncf %cst_15 : f64 to f32
      %36 = arith.addf %in, %35 : f32
      linalg.yield %36 : f32
    } -> tensor<32xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%4 : tensor<32xf32>) outs(%3 : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %35 = math.sqrt %in : f32
      linalg.yield %35 : f32
    } -> tensor<32xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%5 : tensor<32xf32>) outs(%3 : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %35 = arith.cmpf one, %in, %cst : f32
      cf.assert %35, "unimplemented: tensor with zero element"
      %36 = arith.divf %cst_0, %in : f32
      linalg.yield %36 : f32
    } -> tensor<32xf32>
    %expanded = tensor.expand_shape %cst_17 [[0, 1, 2]] output_shape [32, 1, 1] : tensor<32xf32> into tensor<32x1x1xf32>
    %expanded_19 = tensor.expand_shape %6 [[0, 1, 2]] output_shape [32, 1, 1] : tensor<32xf32> into tensor<32x1x1xf32>
    %7 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %expanded : tensor<1x32x16x16xf32>, tensor<32x1x1xf32>) outs(%0 : tensor<1x32x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.subf %in, %in_30 : f32
      linalg.yield %35 : f32
    } -> tensor<1x32x16x16xf32>
    %8 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%7, %expanded_19 : tensor<1x32x16x16xf32>, tensor<32x1x1xf32>) outs(%0 : tensor<1x32x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.mulf %in, %in_30 : f32
      linalg.yield %35 : f32
    } -> tensor<1x32x16x16xf32>
    %expanded_20 = tensor.expand_shape %cst_14 [[0, 1, 2]] output_shape [32, 1, 1] : tensor<32xf32> into tensor<32x1x1xf32>
    %9 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%8, %expanded_20 : tensor<1x32x16x16xf32>, tensor<32x1x1xf32>) outs(%0 : tensor<1x32x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.mulf %in, %in_30 : f32
      linalg.yield %35 : f32
    } -> tensor<1x32x16x16xf32>
    %expanded_21 = tensor.expand_shape %cst_13 [[0, 1, 2]] output_shape [32, 1, 1] : tensor<32xf32> into tensor<32x1x1xf32>
    %10 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%9, %expanded_21 : tensor<1x32x16x16xf32>, tensor<32x1x1xf32>) outs(%0 : tensor<1x32x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.addf %in, %in_30 : f32
      linalg.yield %35 : f32
    } -> tensor<1x32x16x16xf32>
    %11 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%10, %cst_2 : tensor<1x32x16x16xf32>, tensor<f32>) outs(%0 : tensor<1x32x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.cmpf ogt, %in, %in_30 : f32
      %36 = arith.select %35, %in, %in_30 : f32
      linalg.yield %36 : f32
    } -> tensor<1x32x16x16xf32>
    %12 = linalg.generic {indexing_maps = [#map3, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cst_1, %11 : tensor<f32>, tensor<1x32x16x16xf32>) outs(%0 : tensor<1x32x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.cmpf olt, %in, %in_30 : f32
      %36 = arith.select %35, %in, %in_30 : f32
      linalg.yield %36 : f32
    } -> tensor<1x32x16x16xf32>
    %padded = tensor.pad %12 low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%arg1: index, %arg2: index, %arg3: index, %arg4: index):
      tensor.yield %cst : f32
    } : tensor<1x32x16x16xf32> to tensor<1x32x18x18xf32>
    %collapsed = tensor.collapse_shape %cst_12 [[0, 1], [2], [3]] : tensor<32x1x3x3xf32> into tensor<32x3x3xf32>
    %13 = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %collapsed : tensor<1x32x18x18xf32>, tensor<32x3x3xf32>) outs(%1 : tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%cst_10 : tensor<32xf32>) outs(%3 : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %35 = arith.truncf %cst_15 : f64 to f32
      %36 = arith.addf %in, %35 : f32
      linalg.yield %36 : f32
    } -> tensor<32xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%14 : tensor<32xf32>) outs(%3 : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %35 = math.sqrt %in : f32
      linalg.yield %35 : f32
    } -> tensor<32xf32>
    %16 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%15 : tensor<32xf32>) outs(%3 : tensor<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %35 = arith.cmpf one, %in, %cst : f32
      cf.assert %35, "unimplemented: tensor with zero element"
      %36 = arith.divf %cst_0, %in : f32
      linalg.yield %36 : f32
    } -> tensor<32xf32>
    %expanded_22 = tensor.expand_shape %cst_11 [[0, 1, 2]] output_shape [32, 1, 1] : tensor<32xf32> into tensor<32x1x1xf32>
    %expanded_23 = tensor.expand_shape %16 [[0, 1, 2]] output_shape [32, 1, 1] : tensor<32xf32> into tensor<32x1x1xf32>
    %17 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%13, %expanded_22 : tensor<1x32x16x16xf32>, tensor<32x1x1xf32>) outs(%0 : tensor<1x32x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.subf %in, %in_30 : f32
      linalg.yield %35 : f32
    } -> tensor<1x32x16x16xf32>
    %18 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%17, %expanded_23 : tensor<1x32x16x16xf32>, tensor<32x1x1xf32>) outs(%0 : tensor<1x32x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.mulf %in, %in_30 : f32
      linalg.yield %35 : f32
    } -> tensor<1x32x16x16xf32>
    %expanded_24 = tensor.expand_shape %cst_9 [[0, 1, 2]] output_shape [32, 1, 1] : tensor<32xf32> into tensor<32x1x1xf32>
    %19 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%18, %expanded_24 : tensor<1x32x16x16xf32>, tensor<32x1x1xf32>) outs(%0 : tensor<1x32x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.mulf %in, %in_30 : f32
      linalg.yield %35 : f32
    } -> tensor<1x32x16x16xf32>
    %expanded_25 = tensor.expand_shape %cst_8 [[0, 1, 2]] output_shape [32, 1, 1] : tensor<32xf32> into tensor<32x1x1xf32>
    %20 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%19, %expanded_25 : tensor<1x32x16x16xf32>, tensor<32x1x1xf32>) outs(%0 : tensor<1x32x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.addf %in, %in_30 : f32
      linalg.yield %35 : f32
    } -> tensor<1x32x16x16xf32>
    %21 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%20, %cst_2 : tensor<1x32x16x16xf32>, tensor<f32>) outs(%0 : tensor<1x32x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.cmpf ogt, %in, %in_30 : f32
      %36 = arith.select %35, %in, %in_30 : f32
      linalg.yield %36 : f32
    } -> tensor<1x32x16x16xf32>
    %22 = linalg.generic {indexing_maps = [#map3, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cst_1, %21 : tensor<f32>, tensor<1x32x16x16xf32>) outs(%0 : tensor<1x32x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.cmpf olt, %in, %in_30 : f32
      %36 = arith.select %35, %in, %in_30 : f32
      linalg.yield %36 : f32
    } -> tensor<1x32x16x16xf32>
    %23 = tensor.empty() : tensor<1x8x16x16xf32>
    %24 = linalg.fill ins(%cst : f32) outs(%23 : tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
    %25 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%22, %cst_7 : tensor<1x32x16x16xf32>, tensor<8x32x1x1xf32>) outs(%24 : tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
    %26 = tensor.empty() : tensor<8xf32>
    %27 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%cst_5 : tensor<8xf32>) outs(%26 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %35 = arith.truncf %cst_15 : f64 to f32
      %36 = arith.addf %in, %35 : f32
      linalg.yield %36 : f32
    } -> tensor<8xf32>
    %28 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%27 : tensor<8xf32>) outs(%26 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %35 = math.sqrt %in : f32
      linalg.yield %35 : f32
    } -> tensor<8xf32>
    %29 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%28 : tensor<8xf32>) outs(%26 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %35 = arith.cmpf one, %in, %cst : f32
      cf.assert %35, "unimplemented: tensor with zero element"
      %36 = arith.divf %cst_0, %in : f32
      linalg.yield %36 : f32
    } -> tensor<8xf32>
    %expanded_26 = tensor.expand_shape %cst_6 [[0, 1, 2]] output_shape [8, 1, 1] : tensor<8xf32> into tensor<8x1x1xf32>
    %expanded_27 = tensor.expand_shape %29 [[0, 1, 2]] output_shape [8, 1, 1] : tensor<8xf32> into tensor<8x1x1xf32>
    %30 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%25, %expanded_26 : tensor<1x8x16x16xf32>, tensor<8x1x1xf32>) outs(%23 : tensor<1x8x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.subf %in, %in_30 : f32
      linalg.yield %35 : f32
    } -> tensor<1x8x16x16xf32>
    %31 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%30, %expanded_27 : tensor<1x8x16x16xf32>, tensor<8x1x1xf32>) outs(%23 : tensor<1x8x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.mulf %in, %in_30 : f32
      linalg.yield %35 : f32
    } -> tensor<1x8x16x16xf32>
    %expanded_28 = tensor.expand_shape %cst_4 [[0, 1, 2]] output_shape [8, 1, 1] : tensor<8xf32> into tensor<8x1x1xf32>
    %32 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%31, %expanded_28 : tensor<1x8x16x16xf32>, tensor<8x1x1xf32>) outs(%23 : tensor<1x8x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.mulf %in, %in_30 : f32
      linalg.yield %35 : f32
    } -> tensor<1x8x16x16xf32>
    %expanded_29 = tensor.expand_shape %cst_3 [[0, 1, 2]] output_shape [8, 1, 1] : tensor<8xf32> into tensor<8x1x1xf32>
    %33 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%32, %expanded_29 : tensor<1x8x16x16xf32>, tensor<8x1x1xf32>) outs(%23 : tensor<1x8x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.addf %in, %in_30 : f32
      linalg.yield %35 : f32
    } -> tensor<1x8x16x16xf32>
    %34 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %33 : tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) outs(%23 : tensor<1x8x16x16xf32>) {
    ^bb0(%in: f32, %in_30: f32, %out: f32):
      %35 = arith.addf %in, %in_30 : f32
      linalg.yield %35 : f32
    } -> tensor<1x8x16x16xf32>
    return %34 : tensor<1x8x16x16xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      torch_tensor_8_torch.float32_3: "0x04000000BE559ABE32E4E83E3865563E1289A23E90B9613D8815CF3E340588BE7C0E2BBE",
      torch_tensor_8_torch.float32_2: "0x04000000C8BC663FE7A36E3F0B20373F2CD5AF3F5B0C0F3F90AF2B3FC88B0D3F0A7A883F",
      torch_tensor_8_torch.float32_1: "0x040000004808053F7EAF5B3F0AD5A93F1185133F44C86B3FCE11BC3FA5A1583F4CC2A53F",
      torch_tensor_8_torch.float32: "0x04000000E4590BBEDC016EBE68FDC4BED098073E2286EE3EB6A4BEBE6ED7FC3E902D683D",
      torch_tensor_8_32_1_1_torch.float32: "0x04000000D56B87BD9A2300BE6A90103EBF3E223D3029B7BD2137BEBCCA1FFA3DC402293E8C1FBF3A651924BE534BA5BD1221FE3DE960DC3CF1E6F13DD32D153EDD0878BDCA25D23D3065A7BC6C87A0BDBC0FFABD58660D3DFEDF1D3DB38FED3DA296313E12FD0DBE7DF6E8BC2F125BBDE241B93D598BB03D742B243E4C50F93DFBE9F53D6E5F09BE85C9EFBD170B11BEB87EB2BD803BB2BD8DF2FC3D41AEAFBD24471B3E7EC0183E79B9E13DB263D43D908D003EB35AED3CB08BF0BD5A43073EDFE6033EEE62F63D5DBFFCBD3C86B6BC6FC1EA3D4ECFB7BBF9C24CBCBE76C1BDA546B53D88AB9F3D050A1EBD4A9A053E0FFDD4BDE04FBC3D452FF3BB274A92BD0F18E03CEFFB1DBE2BCC133EC31019BDF14FBABD87158E3CDB54D03DB79C063EE96CEF3D8F4F05BD4758243DB628263EE27DC23DFD5C343E15B8FA3C51E52DBE04CA563DBCDD37BDAC7D013D48448D3D214DCC3DB4A3ABBD335C06BE69C7253E3E2D373DA298AD3D862D453DBCDC01BD6FAC26BE2673223E05852B3E28EF70BB246D3DBD3C249F3DA65929BE9D91473DFC7C1A3E96983CBDE94A20BCDFCEB33DBE0583BC4BAA6DBB78A9663DA84760BC8EED50BA9E392FBCE66CCB3D5B33273EBA64813C2DE2D43CEACD00BEC2AEC93D9EA3CC3D71EC03BE3E59D43DCB76463DBA38DEBD87AFEEBCCC2521BEC3FCC33CEBD2B53DEDEFF9BD268059BC3F6F0E3EDDBB0A3E393FE73D0BA7CABDD48383BBE894AEBDB0E2213E5808003C9F21DFBD07CDC8BC3ABF203C662F743D8378DCBCF634F53CBD8B2ABE9E105BBDE210C83DE2A2943D3401313E0E98103E47E0BB3DF2C3AFBD5454233E4449F83D9CC381BDFDADA7BD1FD0B3BD2CD1E5BD3218913D874EBCBD7704203ECCBA223D19C2423B37CD633DA1D5CB3DA75CF0BC01050CBE5ECF30BE7254283ED65D293E1EBD87BDD5661F3E8A5B8F3D85631DBEE827DFBC0E7923BEEA179D3D45E3803D9E53AC3D931EE9BB0EB8D13CFC54D9BD9CF815BE35627FBDE214843DADD705BDAA6C15BDCD99C5BD1AC1B4BD0288BDBD625F15BDB318293E6A4839BDF298BFBC8F39BEBD7642DCBDAA4731BE0BAAE6BD1EA650BDE78327BD6C3CF9BD5C3560BC70A5183E64CE0BBE6FF9E13D3D4B0BBE443A033D476AE13A13B711BEA36DB9BD5DF5ABBD52D109BEC24D533CA30410BE0995283E17D0243C9DF909BE47C390BD80161E3EEADDEDBBBE4EA63DCAB0F83DAFE9B8BD85591B3EFB3ABFBD0BEB16BE6870DB3D949109BE68EDF5BD3CD209BEF2677C3DE7BE12BCC6E81B3E43F49EBD45CF0B3C4334BB3DA678ECBCEF024BBCC247E6BDAA7CD63D22CC873D54E5F7BC1CFF98BDE314F13DBCBD1EBE57FC973D52B7FC3DD6E272BDD0D38F3DBB1F423DA891C73CB6959BBDCEBFD2BC825AD7BC547E8B3D395933BE92CD0FBCAB78643D5DFF593D9CD7C4BD",
      torch_tensor_32_torch.float32_7: "0x0400000030473E3ED0A25D3E80C4F9BBE83B83BEC84BD7BEDA25A93EC0F5E8BC34655EBE905C33BEB00A5E3D563EC73EACD7E5BEB0877C3D74F4E2BE9429D5BE4ED09BBE30ACBC3EE0C7C7BDE075763DF0D8453E601E893D389C423E942684BEC8080A3E1E45C73E321FF9BE60C58B3EA05BEFBD305F923E0871F0BD886EF93D743BC4BE",
      torch_tensor_32_torch.float32_6: "0x0400000080A8AC3F0523773FC912023FDE7C8F3F3A368B3FE12D9E3F54B4073F2C4A8C3F7617B63F1877883F8AC8403F9B40433F9D37933F15309C3F2C261D3F7EFEB83FFD003D3F13C18D3F461FA93F8A40223F30CAAC3F9056803F8FAD573F30952E3F187AB33FECFFA43F9E74643F0B838F3F5A5F913F3135193FD4B1B83F8CC7103F",
      torch_tensor_32_torch.float32_5: "0x040000000782813F6C4C093F3C2B963F5031A33F5C26613FEE860E3FCE89263F3958AC3F88EC5A3F8B7BA03F3EE88B3F37E0B63F839B7B3F028B8E3F2DFC263F78142A3F6AC0AF3FFFDA2C3FECA4813FA72E063F68894F3F81506F3FE2A9A63F9592A73FC80A963F1013613F778C9B3FD06F903F6A82943F2C43893F80A5773FE2FCBB3F",
      torch_tensor_32_torch.float32_4: "0x04000000FC25F9BEA0AEAD3EC2E7EA3E603AF0BE309B99BD8E28AD3E406401BE34BE5A3E808E96BBF0AD67BE544BB93E30569D3DB0AA97BDECAB2D3E68D287BEF8B4C3BD687E98BE842F93BE1A9593BE40150ABD3A66BBBE302369BDA87423BE485ED5BDA42770BE6AA39DBEC264EC3EA4EE433EF8ADD73E409EE6BC329ABC3E80BA003C",
      torch_tensor_32_1_3_3_torch.float32: "0x04000000B0D624BEFE4B3ABEFBB7283EE3255C3EAB7734BDD60F26BD485E76BE8844383E10491B3E2BF176BC137B56BE3B3D2B3E9EDF5EBEF64D5E3E78C187BE6BA2EF3D6ED266BEB66F203DFEFFA43E2EF96F3E6EFB7EBE10B9A2BD6B8F623D00D2E3BDD6697BBDA6F4803EB6677FBE6AC785BECF1D8CBE00BEC6BB368B69BD5661B13D48F03ABE285730BEB03A1BBE2B46033EC7D3A43E9F7393BE36C13B3E1E51613EA69C70BE533947BE578B843E43CC04BE9087373E0077D73C582F98BE70E3373E80D4143D3EC14FBE80456F3D333A01BE6EA741BE301ED4BD02958BBE16929EBE00E8E4BB6EA15EBEAB3DE83DB0ED663ECB881CBDD84590BEF6159CBE0857333E800FB33C066794BEB65515BE2059D53D40D7DD3C0E34243EDAA9A03ED6F2F4BDC068D0BDF0FAA8BE864D9C3E2BA3EABCEB9CC5BD6B82F7BCC3DD13BE8B8A0D3DB0687D3EE04EEE3D1628A93D5EA91CBED8173D3E84D2A93ED2B391BE784F41BEC3D6A53EC3E6833E8B50B23D54219C3EABECE1BB364AA13D58C8223EDF609F3E3C2680BEDEC8183E60E50A3E86B60EBEE39D11BEB83B023EC8494BBE0E20383E6EAA5F3E7B91273EF0553BBE68A0A03EBB0E023EF37CA7BE3FAFA4BE4602F23D93771D3EAE0B943E1E19843E4BF3533EA067CDBD0044B9BC6EC955BE0008363C6031903D6BB31B3E1BAF8C3D20C4773D56E5923974C685BE83C414BEF0669EBDC07DB63DAB68533CC60940BE48C01EBE7BA3A8BDB489913E40B2633E70AB92BEE3FC38BE5020FE3D063BEBBDC6E3D4BD8C028BBE408E0BBDDB81EB3D8070973EE642B9BD180B07BEF65E7C3D807ED83C1686253D1A589EBE3C42853EABC980BB405DEABCFBCEDCBD70469DBEC6BBE1BDAFAD9CBE73700C3E501233BE87D29ABEDBEB2CBE5E89053E40F73DBEAAE583BE403D06BE146FA03ECEA03C3ECB4BA33D1BC0AFBD88470BBEB6FE8B3DE075753EF6AA83BE52D3843E6245A4BECB469ABE08C7A2BE10EFDC3D0042603CD637AA3D7B667ABE06284EBED6ED0F3E487E733E872D8FBE6BAC973C5649B5BCE031A6BD6B19EC3D821B82BE3EA8273E33EE04BE5E62663E5B42A9BD83456F3EE0FE63BEF2F29ABEFBC9A73EFBD9E7BD000E393BEBEA793E686C983EB0498F3DD03E9FBE5E8E53BE5374543E468AD83D7066393E9E2000BECF529EBE96DA5ABDE07D083EA34D6E3EC6AE62BEAE7727BE83628E3E040B8C3EF38DA53E7691733E10DAB63D56754EBA46DA7DBEFB6EF5BD0E3EA7BECBDD5E3E4B88523EC0E6193EEBA172BD486F90BEC2D5943EB0E89A3D864F903D2BCEADBD138A76BE40C2163D2BFA56BD12019A3E0B80FD3D90ACE53D4BA07A3E208D33BE5677653EAB8AFD3A20DC9CBE7022563E73CA65BE3859513E1F68843E40F9C8BC10B2E0BDC01E663DF0237F3E703A2D3E3832823ED6901EBC23F780BE90A2173E96F4C83C86F5A23D4EE49E3EBB5A9CBD98329B3E509249BEBBE25CBEE8355F3EDCC4813E83A301BEB6737A3DE0F01C3DA0FFD93DCB584EBD824AA6BE90F5E33D9AACA5BE204E6BBEEC7786BEE04A063EC37E143EEBD646BEC0D0983E469A6FBE163F793ED055153E1BA095BD6F00873EEB437B3E6B5F8B3EFAA48ABE",
      torch_tensor_32_torch.float32_3: "0x04000000506F16BE6041B2BEF08C82BDC4FAE2BE585590BED06CFABD6201BF3E4C46FEBEBC3C963E54939CBE648EEDBE92E8ACBEBAD3ACBE80FCF73E0097BA3E9A37F33E14388ABE8076F5BE90C8F4BD7820CA3E9016843E6462CBBEE02312BE40BC6A3CD2DEF73E0E20B0BE0297AD3E828B963EFCE489BEE2C5BEBED61E99BE5C47A93E",
      torch_tensor_32_torch.float32_2: "0x040000008E7EB53F1A1B803F19A4A53FBBF7133FAEDE863FB298A53F993FA73F55F1073F1E0AB83F5227823FA886863F74C7833F88F8803F1B17333F6ACBB73F260A943FA116263FD9E61D3F46DFA33FBE65B23F02808B3F5405B83F3572753F58BE4D3F36729D3F02057F3F64CD873FE809853FA03DB03F82E59D3F1EA8A13F6032873F",
      torch_tensor_32_torch.float32_1: "0x040000006E235B3F2A0A813F2A7BBD3F163E073FE82EA73FA1C14B3F5C52BF3FDBEF143F61BB0E3FE0176D3FAE799A3F6046173FF111623FDC891B3FBE96A43F0523433F1416423F7D8D113F445F933F32CDBA3F1359903F8807993F8308B23FC45D773FCA5C7F3F2FB2B63F020C553F6EAB0A3FC938883F1C3E9B3F951F953F108FAF3F",
      torch_tensor_32_torch.float32: "0x04000000E8E936BE78FC973EE0FFEE3D0879FE3EF8BC37BE84F58D3E982E8CBDC866A23DC0ED36BC0CECF2BE7C9F4F3EF8E90C3ED009DFBE20D68CBC9090BF3D1C02CE3E96F0FC3EB09AB5BD88E8B4BD0033E5BD6677BCBE385E7A3ED4A3FA3E2410DC3EC415DFBE6C71ECBE9278A6BE38ECB7BD787404BEA692F0BE3A3EDFBEAAA9CABE",
      torch_tensor_32_8_1_1_torch.float32: "0x040000006DBCB4BE1D5723BDB41F473E67651C3E04ADDC3DE59B763EC4F0ADBE77EA8CBEACF3ABBEFAC59B3E6AE54E3EA648753EBAB6A93E4A97D4BDEECDA93E1B99F53CB614A33DC42FBBBDE081EEBD78D74EBE9494C63D1F5D563E6E245ABEFCD72BBE8E6076BD2D5CA9BE33A666BDADB9A53D4C28E9BC4150CF3C1D0F5B3EF0497ABEA787ECBD114F97BDEF301A3E5980D53D58A89CBE3933F4BC6F768CBE24AB8DBE50312A3D9DBE54BEEE31903E177A3FBE34EE90BD610B243EB053D13D1D836E3D957930BCAE7591BD0E1628BEC3FBAF3E695C893EB1E831BEC142593EB992EC3D71AA73BECB542BBEC1BACCBA5BDD53BE1FAE62BE7F59E7BB0C7E9DBE17AB6DBE5D52663D26DB15BD14812D3E6073813E0E4D673E8CF921BE4F3A293DFE82F0BDF383AF3DFEF6A5BEA852933E04996D3E24439ABD608E1BBE329D963E3D81473EA5A1AF3E21D055BEF5487EBE9BBFA2BE80515ABD7B7EEC3AFA88933E63A93BBE373EA2BEE86B733CF1467F3D8152C73DD5070FBE11FE8DBE4FBAA8BEF3D1B33E6D6ABCBDF7DD87BD03F9443ED03940BEF1C4A5BE375DB0BE98349BBC537AE43D69D42A3EA2D522BED7D3D33C9201823C60A85C3E31D359BE9A61853E6F90A3BDDC9A1B3E4C9895BEF12001BE7A1F48BE9B252FBEF9238CBE4727A63D21D5B03E3951883E523662BE1C9810BD0D13C1BD75241EBEEF8A1EBE769BC03D41951CBEC0857DBE9999413D520DAC3E1EDF41BCC1E2AE3E357167BE960C983EB0B407BC8D23813E65A0433D49B3B73D5D1B98BE102E84BD38E58ABBE5F168BD5D256C3E405507BEC88811BE635683BE0034EF3DB94E953E5F4A803DCB4A5EBE346B093EA581413D1D93653E51EDA5B964E1A83E3CA09C3EED8B66BEE9DB893EF594F4BD38D3B0BE9C0DA93E50C742BE5E55663DDA5CA63E78002EBED520823E1772AC3D7C262A3B4FA90B3E6C9025BE15841ABEDB2B99BE8D55953E729218BE31D38D3EA9383D3D7951B9BC2D049F3E4322353E7403473EF7A64ABDBD59173E10E0ADBE6CD40ABCD89CA0BAF79D96BE66AB84BDBF5EF13D3261743EA718003D1B8C09BE6A702BBE380A6ABEDF0E07BE847E2FBE68B789BEDED58D3DFC1269BEABAF03BCAD31823E54D270BE731E633EB08192BE2E3E99BE214AAE3E118531BE47829A3E236CA23EF9E6C73DF18A34BE7F1CBB3D4CB0963D6CC9963DC560343D39DEB13E9E9C473D1EB1333E4DDE06BE71B3EDBD602B963E9E18F4BC73A9163E2C521FBE97DD8B3DF8848CBEA16C4A3DE4265F3D4B90F4BC8CF8113ED236423E4BA6803E2134A5BE8427E2BC563D513E649C703EE8DB8DBEC335CEB87F2495BC67C370BD4C261B3E6D85173E6781A4BE64B6673D680143BE54C43A3E648504BCF7947B3D42484ABDBC3C903E931096BEAA591D3EF629B03E12050FBE1845BA3D6CC132BE"
    }
  }
#-}
