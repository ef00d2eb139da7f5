module example.invalid/bpflog/examples/go

go 1.19

require github.com/cilium/ebpf v0.9.1

require golang.org/x/sys v0.0.0-20210906170528-6f6e22806c34 // indirect

// Debian's packages of the two modules (golang-github-cilium-ebpf-dev, golang-golang-x-sys-dev):
// the build needs no module proxy. Elsewhere, drop these lines and let the proxy fetch them:
//   go mod edit -dropreplace github.com/cilium/ebpf -dropreplace golang.org/x/sys && go mod tidy
replace github.com/cilium/ebpf => /usr/share/gocode/src/github.com/cilium/ebpf

replace golang.org/x/sys => /usr/share/gocode/src/golang.org/x/sys
