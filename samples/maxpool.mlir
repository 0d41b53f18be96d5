// 2-D max pooling (NHWC), 3x3 window, stride 2: 1x114x114x64 -> 1x56x56x64 (ResNet-50 stem pooling shape).
func.func @forward(%arg0: tensor<1x114x114x64xf32>) -> tensor<1x56x56x64xf32> {
  %cst = arith.constant 0xFF800000 : f32
  %0 = tensor.empty() : tensor<1x56x56x64xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  %2 = tensor.empty() : tensor<3x3xf32>
  %3 = linalg.pooling_nhwc_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%arg0, %2 : tensor<1x114x114x64xf32>, tensor<3x3xf32>) outs(%1 : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  return %3 : tensor<1x56x56x64xf32>
}
