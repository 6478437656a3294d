// Package proto holds the wire contract; `go generate ./proto` regenerates the Go code.
// It needs protoc (Debian: protobuf-compiler) and protoc-gen-go (google.golang.org/protobuf/cmd/protoc-gen-go) on PATH.
package proto

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative skillfleet/v1/skillfleet.proto
