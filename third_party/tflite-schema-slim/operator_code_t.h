/*
 * operator_code_t.h - the one object-API type of the TFLite schema that
 * the TFLM sources arenad compiles name, appended by the Makefile to the
 * schema header it generates without flatc's --gen-object-api.
 *
 * TFLM's schema_utils.h declares GetBuiltinCode() for both the FlatBuffer
 * table tflite::OperatorCode and its object-API counterpart
 * tflite::OperatorCodeT, and schema_utils.cc defines both; nothing that is
 * compiled calls the second. Generating the whole object API only for
 * that would make the schema header about four times as slow to parse in
 * every TFLM file, so this header supplies that type alone, with the
 * fields schema_utils.cc reads, named and typed as flatc would generate
 * them. Written for arenad; see third_party/README.md.
 */
#ifndef ARENAD_TFLITE_OPERATOR_CODE_T_H
#define ARENAD_TFLITE_OPERATOR_CODE_T_H

namespace tflite {

/* An operator code as a plain struct (the schema's OperatorCode). */
struct OperatorCodeT {
  int8_t deprecated_builtin_code = 0;
  int32_t version = 1;
  tflite::BuiltinOperator builtin_code = tflite::BuiltinOperator_ADD;
};

}  // namespace tflite

#endif /* ARENAD_TFLITE_OPERATOR_CODE_T_H */
