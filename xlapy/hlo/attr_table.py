"""THE attribute table: HLO attribute name -> value kind, and XLA's print order. Parser and printer read it.

Kinds (the typed value in Instruction.attrs, and its text):
  int        int                              index=1
  float      float                            epsilon=0.001
  bool       bool                             is_stable=true
  word       str (bare word)                  direction=GT, kind=kLoop
  string     str (unescaped, no quotes)       custom_call_target="foo"
  ints       tuple[int, ...] (or nested tuples for `{{1,2},{3}}`)   dimensions={0,1}
  words      tuple[str, ...]                  operand_precision={high,default}
  comp       Computation                      to_apply=%add
  comps      list[Computation]                branch_computations={%a, %b}
  calls      Computation, or list[Computation] when printed as a list   calls=%fused_computation
  window     attrs.Window                     window={size=3x3 stride=2x2}
  dim_labels attrs.ConvDimensionNumbers       dim_labels=b01f_01io->b01f
  slice      tuple[attrs.SliceRange, ...]     slice={[0:2], [1:7:2]}
  padding    tuple[attrs.PadDim, ...]         padding=0_1_0x2_2_1
  shape      Shape                            outfeed_shape=(u32[3]{0}, pred[])
Any other attribute (metadata, sharding, backend_config, replica_groups, ...) is kept as its raw text.
"""
from __future__ import annotations

_TABLE = """
int         index iota_dimension feature_index feature_group_count batch_group_count index_vector_dim
            exponent_bits mantissa_bits channel_id delta k num_carries cross_program_prefetch_index
            all_gather_dimension split_dimension concat_dimension
float       epsilon
bool        is_stable indices_are_sorted unique_indices lower left_side unit_diagonal largest
            is_host_transfer constrain_layout use_global_device_ids custom_call_has_side_effect
            is_composite is_reverse is_associative is_cross_program_prefetch
word        direction type algorithm kind distribution fft_type transpose_a schedule api_version
string      custom_call_target async_execution_thread infeed_config outfeed_config
ints        dimensions dynamic_slice_sizes fft_length offset_dims collapsed_slice_dims start_index_map
            operand_batching_dims start_indices_batching_dims slice_sizes update_window_dims
            inserted_window_dims scatter_dims_to_operand_dims input_batching_dims
            scatter_indices_batching_dims lhs_batch_dims lhs_contracting_dims rhs_batch_dims
            rhs_contracting_dims lhs_ragged_dims rhs_group_dims
words       operand_precision
comp        to_apply body condition select scatter true_computation false_computation
comps       branch_computations called_computations
calls       calls
window      window
dim_labels  dim_labels
slice       slice
padding     padding
shape       outfeed_shape
"""

ATTR_KINDS: dict[str, str] = {}
_kind = ""
for _line in _TABLE.strip().splitlines():
    _words = _line.split()
    if not _line.startswith(" "):
        _kind, _words = _words[0], _words[1:]
    for _w in _words:
        ATTR_KINDS[_w] = _kind


def kind_of(name: str) -> str:
    return ATTR_KINDS.get(name, "raw")


# XLA's print order (opcode-specific attributes first, then called computations, then the generic ones).
# Used for instructions built by code; parsed instructions keep the order they were written in.
PRINT_ORDER: tuple[str, ...] = tuple("""
kind index iota_dimension parameter_replication
channel_id replica_groups source_target_pairs slice_sizes_cp constrain_layout use_global_device_ids
dimensions is_stable num_carries is_reverse is_associative
offset_dims collapsed_slice_dims start_index_map operand_batching_dims start_indices_batching_dims
update_window_dims inserted_window_dims scatter_dims_to_operand_dims input_batching_dims
scatter_indices_batching_dims index_vector_dim slice_sizes indices_are_sorted unique_indices
lhs_batch_dims lhs_contracting_dims rhs_batch_dims rhs_contracting_dims
window dim_labels feature_group_count batch_group_count operand_precision algorithm
direction type epsilon feature_index exponent_bits mantissa_bits fft_type fft_length
left_side lower unit_diagonal transpose_a distribution dynamic_slice_sizes slice padding
k largest delta is_host_transfer cross_program_prefetch_index infeed_config outfeed_shape outfeed_config
async_execution_thread
custom_call_target operand_layout_constraints custom_call_has_side_effect literal
output_to_operand_aliasing schedule api_version
to_apply condition body select scatter branch_computations true_computation false_computation
called_computations calls is_composite
sharding frontend_attributes statistics control-predecessors origin metadata backend_config
""".split())

_RANK = {name: i for i, name in enumerate(PRINT_ORDER)}


def print_rank(name: str) -> int:
    """Sort key of an attribute in XLA's order; unknown attributes go just before the generic tail."""
    return _RANK.get(name, _RANK["sharding"] - 1)
