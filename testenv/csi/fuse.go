package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The fenced data path. A volume whose context says DataPathAttribute: "fuse" is not
// bind-mounted: the node plugin serves it to its node through FUSE, forwarding every operation
// to the volume's directory in the storage — after asking the storage's fence table (FenceWatch)
// whether this node's address is fenced. A fenced client gets EIO for every data and namespace
// operation: reads, writes, fsyncs, creates, renames, removals, attribute changes — on files
// opened before the fence as well, since each write of an open file is a request here (no
// writeback cache, no passthrough). Lookups, getattr and readdir still answer, so the kubelet
// can unmount a fenced volume.
//
// What it does not model: the check runs in the fenced node's own plugin (a real storage refuses
// at its end; here the table lives in the storage and the node's server obeys it — it fails
// closed when the table cannot be read, and a dead server leaves the mount unusable, ENOTCONN);
// pages already in the node's page cache can still be read by the kernel without asking; a
// restarted node plugin does not serve the volumes it had staged again (the kubelet's next
// stage does).

// DataPathAttribute in a volume's context (a StorageClass parameter of the same name, or a
// static PersistentVolume's volumeAttributes): "fuse" for the fenced data path, "bind" (or
// absent) for the plain bind mount.
const DataPathAttribute = "nodedown.dev/data-path"

type fencedFS struct {
	watch  *FenceWatch
	volume string
	node   string
	// refusedLogged: a refusal is logged once per fence (reset when the client is unfenced).
	mu            sync.Mutex
	refusedLogged bool
}

// check is called before every refusable operation: 0, or EIO for a fenced client.
func (f *fencedFS) check(op string) syscall.Errno {
	if !f.watch.Fenced() {
		f.mu.Lock()
		f.refusedLogged = false
		f.mu.Unlock()
		return 0
	}
	f.mu.Lock()
	first := !f.refusedLogged
	f.refusedLogged = true
	f.mu.Unlock()
	if first {
		at := time.Now().UTC().Format(time.RFC3339Nano)
		log.Printf("fence: refused %s of node %s (%s) on volume %s at %s: the storage has fenced this client",
			op, f.node, f.watch.addr, f.volume, at)
		// The storage's own record, which the fence controller reports as an Event on the fence.
		if err := f.watch.store.RecordRefusal(Refusal{Node: f.node, Addr: f.watch.addr.String(), Volume: f.volume, Op: op, At: at}); err != nil {
			log.Printf("fence: recording the refusal: %v", err)
		}
	}
	return syscall.EIO
}

type fencedNode struct {
	fs.LoopbackNode
	fsys *fencedFS
}

func (f *fencedFS) newNode(root *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
	return &fencedNode{LoopbackNode: fs.LoopbackNode{RootData: root}, fsys: f}
}

func (n *fencedNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if e := n.fsys.check("open"); e != 0 {
		return nil, 0, e
	}
	fh, fl, e := n.LoopbackNode.Open(ctx, flags)
	return n.fsys.wrap(fh), fl, e
}

func (n *fencedNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if e := n.fsys.check("create"); e != 0 {
		return nil, nil, 0, e
	}
	in, fh, fl, e := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	return in, n.fsys.wrap(fh), fl, e
}

func (n *fencedNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.fsys.check("mkdir"); e != 0 {
		return nil, e
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *fencedNode) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.fsys.check("mknod"); e != 0 {
		return nil, e
	}
	return n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
}

func (n *fencedNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	if e := n.fsys.check("rmdir"); e != 0 {
		return e
	}
	return n.LoopbackNode.Rmdir(ctx, name)
}

func (n *fencedNode) Unlink(ctx context.Context, name string) syscall.Errno {
	if e := n.fsys.check("unlink"); e != 0 {
		return e
	}
	return n.LoopbackNode.Unlink(ctx, name)
}

func (n *fencedNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if e := n.fsys.check("rename"); e != 0 {
		return e
	}
	return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
}

func (n *fencedNode) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.fsys.check("symlink"); e != 0 {
		return nil, e
	}
	return n.LoopbackNode.Symlink(ctx, target, name, out)
}

func (n *fencedNode) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.fsys.check("link"); e != 0 {
		return nil, e
	}
	return n.LoopbackNode.Link(ctx, target, name, out)
}

func (n *fencedNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if e := n.fsys.check("setattr"); e != 0 {
		return e
	}
	if ff, ok := f.(*fencedFile); ok {
		f = ff.LoopbackFile
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

func (n *fencedNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if ff, ok := f.(*fencedFile); ok {
		f = ff.LoopbackFile
	}
	return n.LoopbackNode.Getattr(ctx, f, out)
}

func (n *fencedNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	if e := n.fsys.check("setxattr"); e != 0 {
		return e
	}
	return n.LoopbackNode.Setxattr(ctx, attr, data, flags)
}

func (n *fencedNode) Removexattr(ctx context.Context, attr string) syscall.Errno {
	if e := n.fsys.check("removexattr"); e != 0 {
		return e
	}
	return n.LoopbackNode.Removexattr(ctx, attr)
}

func (n *fencedNode) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP // the kernel falls back to reads and writes, which are checked
}

// fencedFile is an open file: each read, write, fsync, allocate and attribute change asks the
// fence first. Never passed through to the kernel (that would bypass the check).
type fencedFile struct {
	*fs.LoopbackFile
	fsys *fencedFS
}

func (f *fencedFS) wrap(fh fs.FileHandle) fs.FileHandle {
	if lf, ok := fh.(*fs.LoopbackFile); ok {
		return &fencedFile{LoopbackFile: lf, fsys: f}
	}
	return fh
}

func (f *fencedFile) PassthroughFd() (int, bool) { return -1, false }

func (f *fencedFile) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if e := f.fsys.check("read"); e != 0 {
		return nil, e
	}
	return f.LoopbackFile.Read(ctx, buf, off)
}

func (f *fencedFile) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if e := f.fsys.check("write"); e != 0 {
		return 0, e
	}
	return f.LoopbackFile.Write(ctx, data, off)
}

func (f *fencedFile) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if e := f.fsys.check("fsync"); e != 0 {
		return e
	}
	return f.LoopbackFile.Fsync(ctx, flags)
}

func (f *fencedFile) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if e := f.fsys.check("allocate"); e != 0 {
		return e
	}
	return f.LoopbackFile.Allocate(ctx, off, size, mode)
}

func (f *fencedFile) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if e := f.fsys.check("setattr"); e != 0 {
		return e
	}
	return f.LoopbackFile.Setattr(ctx, in, out)
}

// mountFenced serves dir at target through the fenced data path until the mount goes.
func mountFenced(dir, target, volume, node string, watch *FenceWatch) (*fuse.Server, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return nil, fmt.Errorf("volume %s: %w", volume, err)
	}
	fsys := &fencedFS{watch: watch, volume: volume, node: node}
	root := &fs.LoopbackRoot{Path: dir, Dev: uint64(st.Dev)}
	root.NewNode = fsys.newNode
	root.RootNode = fsys.newNode(root, nil, "", &st)
	zero := time.Duration(0)
	return fs.Mount(target, root.RootNode, &fs.Options{
		// No attribute or entry caching: a fenced client's metadata questions still reach here.
		AttrTimeout:  &zero,
		EntryTimeout: &zero,
		MountOptions: fuse.MountOptions{
			AllowOther:        true,
			DirectMount:       true,
			DirectMountStrict: true,
			FsName:            "nodedown-csi:" + volume,
			Name:              "nodedown",
		},
	})
}
