package pulpschema

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
)

// DatabaseURL is adminURL with its database replaced by name.
func DatabaseURL(adminURL, name string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", fmt.Errorf("parse database url: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// CreateDatabase creates a database named prefix and a random suffix on the
// server of adminURL and loads the schema into it. It returns the name and
// the URL; on an error after the database was made, it drops it again.
func CreateDatabase(ctx context.Context, adminURL, prefix string) (name, dbURL string, err error) {
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", "", fmt.Errorf("connect to postgresql: %w", err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name = prefix + hex.EncodeToString(b)
	if dbURL, err = DatabaseURL(adminURL, name); err != nil {
		return "", "", err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", "", fmt.Errorf("create database %s: %w", name, err)
	}
	if err := load(ctx, dbURL); err != nil {
		_, _ = admin.Exec(ctx, dropSQL(name))
		return "", "", err
	}
	return name, dbURL, nil
}

func load(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connect to the new database: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, SQL); err != nil {
		return fmt.Errorf("load pulpcore's schema: %w", err)
	}
	return nil
}

// DropDatabase drops a database made by CreateDatabase, disconnecting
// whoever is still in it.
func DropDatabase(ctx context.Context, adminURL, name string) error {
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to postgresql: %w", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, dropSQL(name)); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

func dropSQL(name string) string {
	return "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"
}
