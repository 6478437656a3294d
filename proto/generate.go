// Package proto holds the wire contract; `go generate ./proto` regenerates the Go code.
// `make generate` installs the pinned protoc-gen-go; protoc comes from Debian (protobuf-compiler).
package proto

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative skillfleet/v1/skillfleet.proto
