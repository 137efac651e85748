package mail

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/userd/userd/domain"
)

// emlWriter is the transport without an SMTP server: each message becomes
// an RFC 5322 file in dir, for a developer to open or a test to read.
type emlWriter struct {
	dir string
	log *slog.Logger
}

// deliver writes msg to a new file, atomically: a reader of dir sees a
// whole .eml file or none (the file is written under a dot-name and then
// renamed). The log gets the file's name, never its content, which holds
// a live link.
func (w *emlWriter) deliver(ctx context.Context, msg *gomail.Msg, m domain.Mail) error {
	// The messages hold live links: for the owner only.
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return fmt.Errorf("mail directory: %w", err)
	}
	tmp, err := os.CreateTemp(w.dir, ".*.eml.tmp") // 0600
	if err != nil {
		return fmt.Errorf("mail file: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // fails once renamed, as it should
	_, err = msg.WriteTo(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mail file: %w", err)
	}
	name := filepath.Join(w.dir, time.Now().UTC().Format("20060102T150405.000000000Z")+"-"+randomName()[:8]+".eml")
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("mail file: %w", err)
	}
	w.log.LogAttrs(ctx, slog.LevelInfo, "mail written", slog.String("file", name),
		slog.String("template", string(m.Template)), slog.String("user_id", m.User.String()))
	return nil
}

func (w *emlWriter) close() error { return nil }

// randomName is 16 random bytes in hex: for Message-IDs and file names
// that no two messages share.
func randomName() string {
	var b [16]byte
	// crypto/rand.Read never returns an error since Go 1.24; it panics instead.
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
