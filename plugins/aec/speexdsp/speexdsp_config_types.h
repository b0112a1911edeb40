/* speexdsp's configure writes this from speexdsp_config_types.h.in; on
 * wasm32 the widths are the compiler's. */
#ifndef SPEEXDSP_CONFIG_TYPES_H
#define SPEEXDSP_CONFIG_TYPES_H
typedef __INT16_TYPE__ spx_int16_t;
typedef __UINT16_TYPE__ spx_uint16_t;
typedef __INT32_TYPE__ spx_int32_t;
typedef __UINT32_TYPE__ spx_uint32_t;
#endif
