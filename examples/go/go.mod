module github.com/voxhost/voxhost/examples/go

go 1.24

require github.com/voxhost/voxhost/sdk/go v0.0.0

replace github.com/voxhost/voxhost/sdk/go => ../../sdk/go
