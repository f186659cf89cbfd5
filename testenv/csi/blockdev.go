package main

// Raw block volumes: the volume's data is one file, block.img in its directory on the shared
// storage, sized to the volume's capacity (sparse). A node stages it as a loop device over that
// file, whose device node the plugin makes itself in the staging directory (the node's /dev
// may not list loop devices the kernel made after the node started), and publishes it by
// bind-mounting that device node onto the target file the kubelet maps into the pod.
//
// Every node shares the host's kernel, so a loop device of a node that was powered off (its
// container stopped) stays configured until someone clears it; testenv/up clears the loop
// devices over this storage's files that nobody holds any more.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// BlockFile is the name of a block volume's data file in its directory.
const BlockFile = "block.img"

// loopDevNode is the name of the staged loop device node in the staging directory.
const loopDevNode = "loop"

const loopMajor = 7

// ensureBlockFile makes path a file of size bytes (sparse) if it is not there; an existing
// file keeps its data and size.
func ensureBlockFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o660)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		if err := f.Truncate(size); err != nil {
			return fmt.Errorf("sizing %s to %d bytes: %w", path, size, err)
		}
	}
	return f.Sync()
}

// loopBacking: the file loop device node dev is configured over ("" when it is free).
func loopBacking(dev string) (string, error) {
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	info, err := unix.IoctlLoopGetStatus64(fd)
	if errors.Is(err, unix.ENXIO) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return unix.ByteSliceToString(info.File_name[:]), nil
}

// attachLoop configures a free loop device over backing and makes its device node at dev.
// Idempotent: a node at dev already configured over backing is kept.
func attachLoop(backing, dev string) error {
	if name, err := loopBacking(dev); err == nil && name != "" && sameFile(name, backing) {
		return nil
	}
	_ = os.Remove(dev)
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening /dev/loop-control: %w", err)
	}
	defer unix.Close(ctl)
	file, err := unix.Open(backing, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", backing, err)
	}
	defer unix.Close(file)
	// Another node may take the same free device between the two calls: try again.
	for attempt := 0; ; attempt++ {
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return fmt.Errorf("asking /dev/loop-control for a free loop device: %w", err)
		}
		_ = os.Remove(dev)
		if err := unix.Mknod(dev, unix.S_IFBLK|0o660, int(unix.Mkdev(loopMajor, uint32(n)))); err != nil {
			return fmt.Errorf("making the device node %s (loop%d): %w", dev, n, err)
		}
		fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening %s (loop%d): %w", dev, n, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(file)}
		copy(cfg.Info.File_name[:], backing)
		err = unix.IoctlLoopConfigure(fd, &cfg)
		unix.Close(fd)
		if err == nil {
			return nil
		}
		if errors.Is(err, unix.EBUSY) && attempt < 20 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		_ = os.Remove(dev)
		return fmt.Errorf("configuring loop%d over %s: %w", n, backing, err)
	}
}

// detachLoop clears the loop device at dev (the kernel defers it while someone still holds
// the device open) and removes the node. A missing node is fine.
func detachLoop(dev string) error {
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening %s: %w", dev, err)
	}
	err = unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0)
	unix.Close(fd)
	if err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("clearing the loop device %s: %w", dev, err)
	}
	if err := os.Remove(dev); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// sameFile: the loop's recorded name (truncated to 63 bytes by the kernel) names path.
func sameFile(recorded, path string) bool {
	return recorded == path || (len(recorded) >= 63 && strings.HasPrefix(path, recorded))
}

// stageBlock: the volume's data file exists with its capacity and a loop device over it is
// at <staging>/loop.
func (n *node) stageBlock(id, staging string) error {
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return err
	}
	backing := filepath.Join(n.store.VolumeDir(id), BlockFile)
	if err := ensureBlockFile(backing, n.store.Capacity(id)); err != nil {
		return err
	}
	return attachLoop(backing, filepath.Join(staging, loopDevNode))
}

// publishBlock bind-mounts the staged device node onto target (a file it makes). Idempotent.
func publishBlock(staging, target string, readonly bool) error {
	dev := filepath.Join(staging, loopDevNode)
	if _, err := os.Stat(dev); err != nil {
		return fmt.Errorf("the volume is not staged at %s: %w", staging, err)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	if mounted, err := isMountPoint(target); err != nil || mounted {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDWR, 0o660)
	if err != nil {
		return err
	}
	f.Close()
	flags := uintptr(unix.MS_BIND)
	if err := unix.Mount(dev, target, "", flags, ""); err != nil {
		return fmt.Errorf("bind mount %s at %s: %w", dev, target, err)
	}
	if readonly {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, 0)
			return fmt.Errorf("read-only remount of %s: %w", target, err)
		}
	}
	return nil
}
