/**
 * Numbers from onnx/onnx.in.proto shared by the reader and the writer, so that the two can never
 * disagree about a field.
 */

/** TensorProto field numbers. */
export const TENSOR_FIELD = {
  dims: 1, dataType: 2, segment: 3, floatData: 4, int32Data: 5, stringData: 6, int64Data: 7, name: 8,
  rawData: 9, doubleData: 10, uint64Data: 11, externalData: 13, dataLocation: 14,
} as const;

/** AttributeProto.AttributeType numbers. */
export const ATTRIBUTE_TYPE = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, FLOATS: 6, INTS: 7, STRINGS: 8 } as const;
