package redact

import (
	"context"
	"log/slog"
)

// Handler is a slog.Handler that masks secrets in every record before the
// handler it wraps sees them: the message and every string attribute
// (groups included). A Secret value masks itself already; this is the
// backstop for free text, such as an error that quotes a request.
type Handler struct {
	next slog.Handler
	rd   *Redactor
}

// NewHandler wraps next so that what it logs is redacted by rd.
func NewHandler(next slog.Handler, rd *Redactor) *Handler { return &Handler{next: next, rd: rd} }

func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	msg, _ := h.rd.RedactString(r.Message)
	out := slog.NewRecord(r.Time, r.Level, msg, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = h.attr(a)
	}
	return &Handler{next: h.next.WithAttrs(clean), rd: h.rd}
}

func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), rd: h.rd}
}

// attr masks a string attribute, and those inside a group.
func (h *Handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		s, _ := h.rd.RedactString(v.String())
		return slog.String(a.Key, s)
	case slog.KindGroup:
		as := v.Group()
		clean := make([]any, len(as))
		for i, g := range as {
			clean[i] = h.attr(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			s, _ := h.rd.RedactString(err.Error())
			return slog.String(a.Key, s)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
