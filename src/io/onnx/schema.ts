/**
 * Every message of onnx/onnx.in.proto (IR version 13; the ML types and the distributed-execution
 * messages included) as the validator needs it: each field's number, name, type and whether it
 * repeats. Field numbers the table does not list are unknown fields, skipped as protobuf skips
 * them (reserved ones, and whatever a newer onnx.proto adds).
 *
 * One line per message: "number name type" triples separated by commas, `*` before a repeated
 * field's type. Types: the protobuf scalars ONNX uses (int32, int64, uint64, float, double; enums
 * are written int32, which reads the same), string (UTF-8), bytes, or a message of this table.
 */

const MESSAGES: Readonly<Record<string, string>> = {
  ModelProto:
    "1 ir_version int64, 8 opset_import *OperatorSetIdProto, 2 producer_name string, 3 producer_version string, " +
    "4 domain string, 5 model_version int64, 6 doc_string string, 7 graph GraphProto, " +
    "14 metadata_props *StringStringEntryProto, 20 training_info *TrainingInfoProto, 25 functions *FunctionProto, " +
    "26 configuration *DeviceConfigurationProto",
  GraphProto:
    "1 node *NodeProto, 2 name string, 5 initializer *TensorProto, 15 sparse_initializer *SparseTensorProto, " +
    "10 doc_string string, 11 input *ValueInfoProto, 12 output *ValueInfoProto, 13 value_info *ValueInfoProto, " +
    "14 quantization_annotation *TensorAnnotation, 16 metadata_props *StringStringEntryProto",
  NodeProto:
    "1 input *string, 2 output *string, 3 name string, 4 op_type string, 7 domain string, 8 overload string, " +
    "5 attribute *AttributeProto, 6 doc_string string, 9 metadata_props *StringStringEntryProto, " +
    "10 device_configurations *NodeDeviceConfigurationProto",
  AttributeProto:
    "1 name string, 21 ref_attr_name string, 13 doc_string string, 20 type int32, 2 f float, 3 i int64, " +
    "4 s bytes, 5 t TensorProto, 6 g GraphProto, 22 sparse_tensor SparseTensorProto, 14 tp TypeProto, " +
    "7 floats *float, 8 ints *int64, 9 strings *bytes, 10 tensors *TensorProto, 11 graphs *GraphProto, " +
    "23 sparse_tensors *SparseTensorProto, 15 type_protos *TypeProto",
  ValueInfoProto: "1 name string, 2 type TypeProto, 3 doc_string string, 4 metadata_props *StringStringEntryProto",
  TensorProto:
    "1 dims *int64, 2 data_type int32, 3 segment TensorProto.Segment, 4 float_data *float, 5 int32_data *int32, " +
    "6 string_data *bytes, 7 int64_data *int64, 8 name string, 12 doc_string string, 9 raw_data bytes, " +
    "13 external_data *StringStringEntryProto, 14 data_location int32, 10 double_data *double, " +
    "11 uint64_data *uint64, 16 metadata_props *StringStringEntryProto",
  "TensorProto.Segment": "1 begin int64, 2 end int64",
  SparseTensorProto: "1 values TensorProto, 2 indices TensorProto, 3 dims *int64",
  TensorShapeProto: "1 dim *TensorShapeProto.Dimension",
  "TensorShapeProto.Dimension": "1 dim_value int64, 2 dim_param string, 3 denotation string",
  TypeProto:
    "1 tensor_type TypeProto.Tensor, 4 sequence_type TypeProto.Sequence, 5 map_type TypeProto.Map, " +
    "9 optional_type TypeProto.Optional, 8 sparse_tensor_type TypeProto.SparseTensor, " +
    "7 opaque_type TypeProto.Opaque, 6 denotation string",
  "TypeProto.Tensor": "1 elem_type int32, 2 shape TensorShapeProto",
  "TypeProto.Sequence": "1 elem_type TypeProto",
  "TypeProto.Map": "1 key_type int32, 2 value_type TypeProto",
  "TypeProto.Optional": "1 elem_type TypeProto",
  "TypeProto.SparseTensor": "1 elem_type int32, 2 shape TensorShapeProto",
  "TypeProto.Opaque": "1 domain string, 2 name string",
  StringStringEntryProto: "1 key string, 2 value string",
  TensorAnnotation: "1 tensor_name string, 2 quant_parameter_tensor_names *StringStringEntryProto",
  OperatorSetIdProto: "1 domain string, 2 version int64",
  FunctionProto:
    "1 name string, 4 input *string, 5 output *string, 6 attribute *string, 11 attribute_proto *AttributeProto, " +
    "7 node *NodeProto, 8 doc_string string, 9 opset_import *OperatorSetIdProto, 10 domain string, " +
    "13 overload string, 12 value_info *ValueInfoProto, 14 metadata_props *StringStringEntryProto",
  TrainingInfoProto:
    "1 initialization GraphProto, 2 algorithm GraphProto, 3 initialization_binding *StringStringEntryProto, " +
    "4 update_binding *StringStringEntryProto",
  DeviceConfigurationProto: "1 name string, 2 num_devices int32, 3 device *string",
  IntIntListEntryProto: "1 key int64, 2 value *int64",
  NodeDeviceConfigurationProto: "1 configuration_id string, 2 sharding_spec *ShardingSpecProto, 3 pipeline_stage int32",
  ShardingSpecProto:
    "1 tensor_name string, 2 device *int64, 3 index_to_device_group_map *IntIntListEntryProto, " +
    "4 sharded_dim *ShardedDimProto",
  ShardedDimProto: "1 axis int64, 2 simple_sharding *SimpleShardedDimProto",
  SimpleShardedDimProto: "1 dim_value int64, 2 dim_param string, 3 num_shards int64",
};

/** How a field's value is checked: scalars by wire type, strings as UTF-8, bytes not at all. */
export type FieldKind = "varint" | "fixed32" | "fixed64" | "string" | "bytes" | "message";

export interface FieldSpec {
  readonly number: number;
  readonly name: string;
  readonly kind: FieldKind;
  readonly repeated: boolean;
  /** The message type, for kind "message". */
  readonly message?: MessageType;
}

export interface MessageType {
  readonly name: string;
  readonly fields: ReadonlyMap<number, FieldSpec>;
}

const SCALARS: Readonly<Record<string, FieldKind>> = {
  int32: "varint", int64: "varint", uint64: "varint", float: "fixed32", double: "fixed64", string: "string", bytes: "bytes",
};

function build(): ReadonlyMap<string, MessageType> {
  const types = new Map<string, { name: string; fields: Map<number, FieldSpec> }>();
  for (const name of Object.keys(MESSAGES)) types.set(name, { name, fields: new Map() });
  for (const [name, line] of Object.entries(MESSAGES)) {
    for (const entry of line.split(", ")) {
      const [num, field, written] = entry.split(" ");
      const repeated = written.startsWith("*");
      const type = repeated ? written.slice(1) : written;
      const scalar = SCALARS[type];
      const message = scalar ? undefined : types.get(type);
      // A typo in the table would otherwise silently make a field unknown.
      if (!scalar && !message) throw new Error(`schema.ts: ${name}.${field} has unknown type ${type}`);
      types.get(name)!.fields.set(Number(num), { number: Number(num), name: field, kind: scalar ?? "message", repeated, message });
    }
  }
  return types;
}

const TYPES = build();

/** A message type of onnx.proto by name ("ModelProto", "TypeProto.Tensor"). */
export function messageType(name: string): MessageType {
  const t = TYPES.get(name);
  if (!t) throw new Error(`schema.ts: no message ${name}`);
  return t;
}
