module github.com/voxhost/voxhost/sdk/go

go 1.24
