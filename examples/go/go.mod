module github.com/voxhost/voxhost/examples/go

go 1.26.0

require github.com/voxhost/voxhost v0.0.0

// The Go SDK is a package of the voxhost module (github.com/voxhost/voxhost/sdk/go);
// a project made by `voxhost plugin new --lang go` gets a copy of it instead.
replace github.com/voxhost/voxhost => ../..
