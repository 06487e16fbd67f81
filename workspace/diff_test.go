package workspace_test

import (
	"bytes"
	"testing"

	"airlock.dev/airlock/workspace"
)

// overlayDiff runs script on an overlay of the fixture's workspace and
// returns the diff of its changes, the overlay left for the caller.
func overlayDiff(t *testing.T, f *fixture, script string, lim workspace.DiffLimits) (string, *workspace.Overlay, *workspace.ChangeSet) {
	t.Helper()
	o, err := f.w.NewOverlay()
	if err != nil {
		t.Fatal(err)
	}
	runOnOverlay(t, f.dir, o, script)
	set, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := o.Diff(set, &out, lim); err != nil {
		t.Fatal(err)
	}
	return out.String(), o, set
}

func checkText(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n--- got\n%s\n--- want\n%s", what, got, want)
	}
}

func TestOverlayDiff(t *testing.T) {
	f := newFixture(t, nil)
	runPlain(t, f.dir, `
		seq 1 12 > a.txt
		echo bye > del.txt
		printf '#!/bin/sh\n' > mode.sh; chmod 644 mode.sh
		ln -s a.txt link
		printf 'x' > noeol.txt
		mkdir -p gone/sub; echo g > gone/g; echo s > gone/sub/s
		head -c 300 /dev/zero | tr '\0' 'l' > large.txt
		echo was a file > typed
	`)
	got, o, set := overlayDiff(t, f, `
		sed -i 's/^5$/five/' a.txt
		echo hello > add.txt
		rm del.txt
		chmod 755 mode.sh
		rm link; ln -s del.txt link
		printf 'y' > noeol.txt
		rm -rf gone
		printf 'a\000b' > bin.dat
		head -c 301 /dev/zero | tr '\0' 'l' > large.txt
		mkdir empty
		rm typed; ln -s a.txt typed
		printf 'two\nlines\n' > 'with space'
		printf 'odd\n' > "$(printf 'new\nline')"
	`, workspace.DiffLimits{MaxFileBytes: 200})
	want := `diff --airlock a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -2,7 +2,7 @@
 2
 3
 4
-5
+five
 6
 7
 8
diff --airlock a/add.txt b/add.txt
new file mode 100644
--- /dev/null
+++ b/add.txt
@@ -0,0 +1 @@
+hello
diff --airlock a/bin.dat b/bin.dat
new file mode 100644
Binary files /dev/null and b/bin.dat differ (0 bytes -> 3 bytes)
diff --airlock a/del.txt b/del.txt
deleted file mode 100644
--- a/del.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --airlock a/empty b/empty
new directory mode 040755
diff --airlock a/gone/g b/gone/g
deleted file mode 100644
--- a/gone/g
+++ /dev/null
@@ -1 +0,0 @@
-g
diff --airlock a/gone/sub/s b/gone/sub/s
deleted file mode 100644
--- a/gone/sub/s
+++ /dev/null
@@ -1 +0,0 @@
-s
diff --airlock a/large.txt b/large.txt
Files a/large.txt and b/large.txt differ (300 bytes -> 301 bytes), too large to show (DiffLimits.MaxFileBytes)
diff --airlock a/link b/link
--- a/link
+++ b/link
@@ -1 +1 @@
-a.txt
\ No newline at end of file
+del.txt
\ No newline at end of file
diff --airlock a/mode.sh b/mode.sh
old mode 100644
new mode 100755
diff --airlock "a/new\nline" "b/new\nline"
new file mode 100644
--- /dev/null
+++ "b/new\nline"
@@ -0,0 +1 @@
+odd
diff --airlock a/noeol.txt b/noeol.txt
--- a/noeol.txt
+++ b/noeol.txt
@@ -1 +1 @@
-x
\ No newline at end of file
+y
\ No newline at end of file
diff --airlock a/typed b/typed
deleted file mode 100644
--- a/typed
+++ /dev/null
@@ -1 +0,0 @@
-was a file
diff --airlock a/typed b/typed
new file mode 120000
--- /dev/null
+++ b/typed
@@ -0,0 +1 @@
+a.txt
\ No newline at end of file
diff --airlock a/with space b/with space
new file mode 100644
--- /dev/null
+++ b/with space	
@@ -0,0 +1,2 @@
+two
+lines
`
	checkText(t, "the diff", got, want)
	t.Logf("summary: %s", set.Summary())
	if err := o.Discard(); err != nil {
		t.Fatal(err)
	}
}
