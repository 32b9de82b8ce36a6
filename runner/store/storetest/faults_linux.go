package storetest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Unwritable makes the files at paths (those that exist) unwritable, even
// through the descriptors a store holds open, until repair is called or
// the test ends: it sets their immutable attribute (chattr +i), which
// holds for root too. It skips the test where that cannot be done: it
// needs CAP_LINUX_IMMUTABLE (root, outside restricted containers) and a
// file system that keeps the attribute (ext4, xfs, btrfs).
func Unwritable(t *testing.T, paths ...string) (repair func()) {
	t.Helper()
	var set []string
	repair = func() {
		for _, p := range set {
			if err := immutable(p, false); err != nil {
				t.Errorf("repair %s: %v", p, err)
			}
		}
		set = nil
	}
	t.Cleanup(repair)
	for _, p := range paths {
		err := immutable(p, true)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.ENOTTY), errors.Is(err, syscall.EOPNOTSUPP):
			repair()
			t.Skipf("cannot make %s unwritable (chattr +i needs CAP_LINUX_IMMUTABLE and ext4, xfs or btrfs): %v", p, err)
		case err != nil:
			t.Fatal(err)
		}
		set = append(set, p)
	}
	return repair
}

// fsImmutable is FS_IMMUTABLE_FL of linux/fs.h.
const fsImmutable = 0x10

// immutable sets or clears the immutable attribute of the file at path.
func immutable(path string, on bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fd := int(f.Fd())
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	if on {
		flags |= fsImmutable
	} else {
		flags &^= fsImmutable
	}
	return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags))
}

// SmallDisk is a directory on a file system of its own of size bytes (a
// tmpfs), unmounted when the test ends, where a store fills the disk. It
// skips the test where it cannot mount one (it needs CAP_SYS_ADMIN).
func SmallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Skipf("cannot mount a small file system to fill (it needs CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
