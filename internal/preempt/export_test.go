package preempt

// AppendULEB and AppendSLEB are the rewriter's LEB128 encoders, for the
// tests that build modules byte by byte.
var AppendULEB, AppendSLEB = appendU64, appendS64
