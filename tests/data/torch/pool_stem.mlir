#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
module {
  func.func @forward(%arg0: tensor<1x3x32x32xf32>) -> tensor<1x16x8x8xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 1.000000e+00 : f32
    %cst_1 = arith.constant 0xFF800000 : f32
    %cst_2 = arith.constant dense_resource<torch_tensor_16_torch.float32_3> : tensor<16xf32>
    %cst_3 = arith.constant dense_resource<torch_tensor_16_torch.float32_2> : tensor<16xf32>
    %cst_4 = arith.constant 1.000000e-05 : f64
    %cst_5 = arith.constant dense_resource<torch_tensor_16_torch.float32_1> : tensor<16xf32>
    %cst_6 = arith.constant dense_resource<torch_tensor_16_torch.float32> : tensor<16xf32>
    %cst_7 = arith.constant dense_resource<torch_tensor_16_3_3_3_torch.float32> : tensor<16x3x3x3xf32>
    %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%arg1: index, %arg2: index, %arg3: index, %arg4: index):
      tensor.yield %cst : f32
    } : tensor<1x3x32x32xf32> to tensor<1x3x34x34xf32>
    %0 = tensor.empty() : tensor<1x16x16x16xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %cst_7 : tensor<1x3x34x34xf32>, tensor<16x3x3x3xf32>) outs(%1 : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
    %3 = tensor.empty() : tensor<16xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%cst_5 : tensor<16xf32>) outs(%3 : tensor<16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %16 = arith.truncf %cst_4 : f64 to f32
      %17 = arith.addf %in, %16 : f32
      linalg.yield %17 : f32
    } -> tensor<16xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%4 : tensor<16xf32>) outs(%3 : tensor<16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %16 = math.sqrt %in : f32
      linalg.yield %16 : f32
    } -> tensor<16xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%5 : tensor<16xf32>) outs(%3 : tensor<16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %16 = arith.cmpf one, %in, %cst : f32
      cf.assert %16, "unimplemented: tensor with zero element"
      %17 = arith.divf %cst_0, %in : f32
      linalg.yield %17 : f32
    } -> tensor<16xf32>
    %expanded = tensor.expand_shape %cst_6 [[0, 1, 2]] output_shape [16, 1, 1] : tensor<16xf32> into tensor<16x1x1xf32>
    %expanded_8 = tensor.expand_shape %6 [[0, 1, 2]] output_shape [16, 1, 1] : tensor<16xf32> into tensor<16x1x1xf32>
    %7 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %expanded : tensor<1x16x16x16xf32>, tensor<16x1x1xf32>) outs(%0 : tensor<1x16x16x16xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %16 = arith.subf %in, %in_12 : f32
      linalg.yield %16 : f32
    } -> tensor<1x16x16x16xf32>
    %8 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%7, %expanded_8 : tensor<1x16x16x16xf32>, tensor<16x1x1xf32>) outs(%0 : tensor<1x16x16x16xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %16 = arith.mulf %in, %in_12 : f32
      linalg.yield %16 : f32
    } -> tensor<1x16x16x16xf32>
    %expanded_9 = tensor.expand_shape %cst_3 [[0, 1, 2]] output_shape [16, 1, 1] : tensor<16xf32> into tensor<16x1x1xf32>
    %9 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%8, %expanded_9 : tensor<1x16x16x16xf32>, tensor<16x1x1xf32>) outs(%0 : tensor<1x16x16x16xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %16 = arith.mulf %in, %in_12 : f32
      linalg.yield %16 : f32
    } -> tensor<1x16x16x16xf32>
    %expanded_10 = tensor.expand_shape %cst_2 [[0, 1, 2]] output_shape [16, 1, 1] : tensor<16xf32> into tensor<16x1x1xf32>
    %10 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%9, %expanded_10 : tensor<1x16x16x16xf32>, tensor<16x1x1xf32>) outs(%0 : tensor<1x16x16x16xf32>) {
    ^bb0(%in: f32, %in_12: f32, %out: f32):
      %16 = arith.addf %in, %in_12 : f32
      linalg.yield %16 : f32
    } -> tensor<1x16x16x16xf32>
    %11 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%10 : tensor<1x16x16x16xf32>) outs(%0 : tensor<1x16x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %16 = arith.cmpf ugt, %in, %cst : f32
      %17 = arith.select %16, %in, %cst : f32
      linalg.yield %17 : f32
    } -> tensor<1x16x16x16xf32>
    %padded_11 = tensor.pad %11 low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%arg1: index, %arg2: index, %arg3: index, %arg4: index):
      tensor.yield %cst_1 : f32
    } : tensor<1x16x16x16xf32> to tensor<1x16x18x18xf32>
    %12 = tensor.empty() : tensor<1x16x8x8xf32>
    %13 = linalg.fill ins(%cst_1 : f32) outs(%12 : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
    %14 = tensor.empty() : tensor<3x3xf32>
    %15 = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded_11, %14 : tensor<1x16x18x18xf32>, tensor<3x3xf32>) outs(%13 : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
    return %15 : tensor<1x16x8x8xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      torch_tensor_16_torch.float32_3: "0x040000008E42BB3E746E903E5885DF3DCACAE33E00E880BA30D8C83EE2098B3E800928BC58289EBDE081DA3CEA60F63E583A273E3ABC83BE3ED5F0BE0C71B5BE60A3D0BE",
      torch_tensor_16_torch.float32_2: "0x040000009E84B13F8FBB9F3F8CB3933FD425A03F5D4D313F14AE343F747E7F3F5693313FCCCDB33F86F0863FDAAFA33F5DEE433F8CB13F3F77DFBD3FA1B0213F02E88D3F",
      torch_tensor_16_torch.float32_1: "0x040000002183B63F7A60413F1155523F6028AF3F36A9643F806A8D3FB3CF5C3F86C3B63FCEC9B33F419C8B3F8CA8BF3F5CC7873F9CC9233F1DC1453F56B98E3F62FE833F",
      torch_tensor_16_torch.float32: "0x04000000E029CFBD0291AFBEE896E33DC033F1BE303BA53D703DC93E3AFC92BE66C7DBBEC6F2C2BE08813CBEA679923E282ED6BE58E0943D4A5DCD3E3A85E5BEFA59C6BE",
      torch_tensor_16_3_3_3_torch.float32: "0x04000000C7C308BEF8D7EEBD7FDC023ECB81B4BD6DC53DBCFE6F383E5FBA2FBE0D75C53D7D1699BC4B66A53B42690B3E439739BE73A1993DAC84C53DE95009BDFD39D13CA0E20A3E2B8504BEA451253EF5FD07BE7D7BCD3D81411F3E831D7D3D91BC28BEE174433EF3BA303DA55766BDED61F93D85A5063E72B67E3D946A1BBE33F80D3D037AB8BDCAC1DEBD6B3A363ECDADDBBDC4D30BBE8E807ABD4D79423EACF983BDFAB519BE10A7D5BD1A74E4BD53FF983D289EAB3D168DDB3D4A40D13B10DB20BE4F0505BE247DC13D1A6C35BE0F86153D35DA03BE3558B5BC7C2680BDC15CE03DF3DDC93CE83F11BEDB2F01BE61C17CBC2777A83DB2DE49BD4A4FA4BDE5B927BE6B1E583D3BF5073E566F253A142C103C061C0DBE426BE5BD954B26BE426530BCFDC71CBE661BC8BDD9AA413D4A6B02BE50E6D43DA524193E0106983D385ED33D0DE9FBBD1787AA3D323BE03CBC41FCBCE23FB1BC7467D8BDCD099B3C489F37BEE95EFBBDC5C5653DFD53293D214E6BBC5BF03DBED22E06BEE7AF2CBEA2A9383EC25411BEEA3E193EA8C1453DFC6CAD3C5BA4653D74B70CBE176F9BBD60E4CF3D76785FBD127520BE0AF8B73D598AA8BD6CA2F9BD9C1DA93D0043E53D79E9E03D03B1183E60FB9B3D307503BE4641B23DB732B3BD3DA11F3C6573FD3D549BE6BD5FA61CBE6BB032BE45E3FF3CB9C3983D0F860C3E818A363E9F566B3DB7AA313E4DB207BD0544E83D5C2F0DBEA824FBBD4A99913DEC26EA3D10D2EC3C1168563DEBA6033EAFD0E63D2513C43D2DF9613D00FF25BE08B9033D69E03C3DA9DB023E17FB2A3D3EDFB1BDE008963D403E9EBD7866C3BDF56A353E016109BE0DD83A3EAB644EBD8C297EBDE322383E0B1F023D78FD293EC4FA3B3ECEC1053D8B8427BE07E216BEEFAFC6BCEFF1ADBD81A1B13C1AC92D3E8B6478BDAE270DBEE6BC073E3DAC27BE1B8A2DBEAD9BD2BD4C012B3E5FDF8BBD6B123B3E590F16BC0DF224BCC32AD53BBB394BBD5E1904BE27FDA2BC9012603D000D8D3DBD22C1BA3A1B2E3D9DC01F3E6FDD5D3D5C270ABEEAC7BBBB7F5120BD6831403CB8C805BE0E1C25BDB29B8A3D1F5C023D51D9443E9E17E43D5D9EE1BCA5B5203DC84E1C3E21FB833D13333D3EA244423EA2C8E7BD394807BE3905323E9DAD27BE64FC163E4B6235BE1C9794BCCC998E3D60FC19BED18FCD3D73DA8E3D3D9A19BE0A0729BE7106953C83CE16BE0FD4A1BD5D9D86BD78E4CB3DC804C7BD6D55E7BDB0C07D3D3C0029BEFA46F63D1C2224BCD6D2C23C81EE823DF61696BDADE6043D54DEA63D2B70143E19DB1CBBFF68BA3DE81E41BE3AF77A3D09EEE63D567CD1BD6FCA203ED6973E3ED74934BECEFF073E12D10A3E04D42CBE52A1C1BC0FDAECBDB5BE30BE48D7CABDF98FBDBD14BB85BD7C0BF83DCA00D93D6A85BFBD02AA02BE296F6F3C2763B7BD158B8FBDDD27133DBB01E1BDFEFE643D4C68713D32B501BEB22B14BD55850F3EAB39053E7715433E7174143DACAB9E3B8E813E3EF387F6BD881744BE8B810F3EAF3AEFBD9BBE543C4FA8053E178EAFBD4972033DC51C76BDF693673D37A4F63DF5DE88BC495AA3BD85CF013E15E527BD95250CBD7F0A393EBBF8C33D5C6AED3D55FFC13C881818BE1D39B7BD94640B3DF2CB3D3EC70923BEC88701BE9E8534BC03938CBD288242BEA1B3A13D5D65933DAD8C47BD0FCED5BDA9618C3D9C2F9FBD7322003E7A6F413E0F22C4BD4DCA9DBDF0C316BE019FA5BD3FB427BC5B2324BE064EF83D14D43EBE16EB893C404BDC3D40E9283D9E9805BEDC1C753D0F5109BE0652C7BD8A78EB3D382856BC300401BD2BA8083EBB54DE3D6059B93D153BE8BD084A1D3E0DBB223E5DC353BD02922B3EC0240A3DCD9D44BE2410B63C6F0B3BBE54098E3D85A9293E130814BEC35AD43DE9D5393E38DC23BE57BA88BD6F32273E711E923D4D01883D26054FBD13AA133EC03D0B3D6E37D9BDE442DABD663939BE494107BE5FE6DF3C54E6753D55BE5ABDE9723EBE005145BDFC8FF43D3193E03B392C92BD40531A3EC480163EED37BB3DE335F3BDF8203FBD1635D73D9BA3303ECEFAEB3D033A19BE55253EBE1A805A3DA7741ABD71D650BCC345403E1700F23C0FC32DBED987A8BC14E7D2BDF783603D6803D5BCBA33A73DC16C28BEA1928CB9EF37B53D5E212A3EF11F30BEDADB98BDDD3324BD7BB933BE4DD321BEB81821BE5857443AE07C8BBC110294BDE771EFBD18883ABEF378E4BCD1B616BEF07E1C3E7F25F0BD026BE2BDC4580DBEE56327BE26B6403E1714833D9C3FB53D0BC1F53C359FE5BCFC31BB3DCBE62CBE4970D3BD587B97BD0F33A4BDD9385E3D12F385BD232B0C3E837D223C33B53BBE883A45BD4D285B3DBE06373DADBED0BDB82D5F3D5658733D5D63063D8E8DE2BD35E703BE1A2927BEA049DABD0626103EF7FB3F3E"
    }
  }
#-}
