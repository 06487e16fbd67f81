package command

import "testing"

// TestArchives: making and unpacking archives inside the workspace is
// allowed; what they write is checked like any write, and the options
// that run programs ask.
func TestArchives(t *testing.T) {
	checkTable(t, Default(), nil, table{
		{"tar czf out.tgz dir/", allow("allow:build", "tar")},
		{"tar -cf a.tar src", allow("allow:build", "tar")},
		{"tar -czvf dist/a.tgz -C build .", allow("allow:build", "tar")},
		{"tar --create --file=a.tar src", allow("allow:build", "tar")},
		{"tar xzf a.tgz", allow("allow:build", "tar")},
		{"tar -xf a.tar -C out", allow("allow:build", "tar")},
		{"tar xf /tmp/a.tar", allow("allow:build", "tar")},
		{"tar tzf a.tgz", allow("allow:inspect", "tar")},
		{"tar --version", allow("allow:inspect", "tar")},
		{"zip -r out.zip dir", allow("allow:build", "zip")},
		{"zip -q out.zip a.txt b.txt", allow("allow:build", "zip")},
		{"unzip a.zip -d out", allow("allow:build", "unzip")},
		{"unzip -o a.zip", allow("allow:build", "unzip")},
		{"unzip -l a.zip", allow("allow:inspect", "unzip")},
		{"gzip file.txt", allow("allow:build", "gzip")},
		{"gunzip a.gz", allow("allow:build", "gunzip")},
		{"gzip -c x > x.gz", allow("allow:build", "gzip")},
		{"xz -k big.log", allow("allow:build", "xz")},
		{"zstd -o out.zst x", allow("allow:build", "zstd")},
		{"/usr/bin/tar czf out.tgz src", allow("allow:build", "tar")},
		{"env tar xzf a.tgz", allow("allow:build", "tar")},
		// Writes outside, or to protected files, or of everything.
		{"tar xzf a.tgz -C /", deny("deny:destructive-outside", "tar")},
		{"tar -x -f a.tar --directory=/etc", deny("deny:destructive-outside", "tar")},
		{"tar xPf a.tar", deny("deny:destructive-outside", "tar")},
		{"tar -xf a.tar --absolute-names", deny("deny:destructive-outside", "tar")},
		{"tar czf /etc/x.tgz src", deny("deny:destructive-outside", "tar")},
		{"tar czf x.tgz ~", deny("deny:credentials", "tar")},
		{"tar czf x.tgz --remove-files *", ask("ask:workspace-delete", "tar")},
		{"tar czf x.tgz --remove-files /usr/src/x", deny("deny:destructive-outside", "tar")},
		{"cd sub && tar xf a.tar -C ..", allow("allow:inspect", "cd")},
		{"unzip a.zip -d /usr/lib", deny("deny:destructive-outside", "unzip")},
		{"cd / && unzip a.zip", deny("deny:destructive-outside", "unzip")},
		{"zip -r /root/x.zip .", deny("deny:destructive-outside", "zip")},
		{"zip -rm x.zip *", ask("ask:workspace-delete", "zip")},
		{"gzip -r .", ask("ask:workspace-delete", "gzip")},
		{"gzip *", ask("ask:workspace-delete", "gzip")},
		{"gzip /etc/passwd", deny("deny:destructive-outside", "gzip")},
		{"tar cf Makefile src", ask("ask:host-executed-file", "tar")},
		{"tar cf .airlock/x.tar src", deny("deny:protected-file", "tar")},
		// Options that run programs still ask.
		{"tar --to-command='sh -c x' -xf a.tar", ask("ask:unknown", "tar")},
		{"tar --to-command=cat -xf a.tar", ask("ask:unknown", "tar")},
		{"tar -cf a.tar --checkpoint=1 --checkpoint-action=exec='rm -rf /' .", ask("ask:unknown", "tar")},
		{"tar -I 'sh -c x' -cf a.tar .", ask("ask:unknown", "tar")},
		{"tar --use-compress-program=./x -cf a.tar .", ask("ask:unknown", "tar")},
		{"tar cIf ./x a.tar .", ask("ask:unknown", "tar")},
		{"tar -cf a.tar -F ./x .", ask("ask:unknown", "tar")},
		{"tar --rsh-command=/bin/x -cf h:a.tar .", ask("ask:unknown", "tar")},
		{"tar -cf host:/a.tar .", ask("ask:network", "tar")},
		{"tar", ask("ask:unknown", "tar")},
		{"zip -T -TT 'rm -rf /' x.zip a", ask("ask:unknown", "zip")},
		{"zip --unzip-command=./x -T x.zip a", ask("ask:unknown", "zip")},
	})
}
