package main

// The calls of libbpflog this loader makes, through cgo: the library and its header found by
// pkg-config (PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig after crates/capi/install.sh).

/*
#cgo pkg-config: bpflog
#include <stdlib.h>
#include <bpflog.h>

int bpflogWrite(void *ctx, uint8_t *buf, size_t len);
*/
import "C"

import (
	"bufio"
	"errors"
	"os"
	"unsafe"
)

// object is a BPF object opened by bpflog, its programs laid out as cilium/ebpf loads them.
type object struct {
	ptr *C.struct_bpflog_object
}

// failure takes the message of a bpflog error and frees it.
func failure(err *C.struct_bpflog_error) error {
	defer C.bpflog_error_free(err)
	return errors.New(C.GoString(C.bpflog_error_message(err)))
}

// openObject opens the object file at path for bpflog, as cilium/ebpf lays out its programs.
func openObject(path string) (*object, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var err *C.struct_bpflog_error
	ptr := C.bpflog_object_open_path_loader(cpath, C.BPFLOG_LOADER_CILIUM, &err)
	if ptr == nil {
		return nil, failure(err)
	}
	return &object{ptr}, nil
}

func (o *object) close() {
	C.bpflog_object_free(o.ptr)
}

// out is where bpflogWrite writes: the library hands it the output piece by piece.
var out = bufio.NewWriterSize(os.Stdout, 64<<10)

//export bpflogWrite
func bpflogWrite(ctx unsafe.Pointer, buf *C.uint8_t, n C.size_t) C.int {
	if _, err := out.Write(unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))); err != nil {
		return 1
	}
	return 0
}

// show writes the log of program prog annotated (rich style), then the explanation of its
// rejection (one JSON object per rejection), to stdout. A nil prog chooses the program from the
// log.
func (o *object) show(prog *string, log []byte) error {
	var cprog *C.char
	if prog != nil {
		cprog = C.CString(*prog)
		defer C.free(unsafe.Pointer(cprog))
	}
	var clog *C.uint8_t
	if len(log) > 0 {
		clog = (*C.uint8_t)(unsafe.Pointer(&log[0]))
	}
	n := C.size_t(len(log))
	write := C.bpflog_write_fn(C.bpflogWrite)
	var err *C.struct_bpflog_error
	rich := C.uint32_t(C.BPFLOG_STYLE_RICH)
	if C.bpflog_annotate(o.ptr, cprog, clog, n, rich, write, nil, &err) != C.BPFLOG_OK ||
		C.bpflog_explain_json(o.ptr, cprog, clog, n, write, nil, &err) != C.BPFLOG_OK {
		out.Flush()
		return failure(err)
	}
	return out.Flush()
}
