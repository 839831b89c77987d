module github.com/lock-reaper/lock-reaper/judge

go 1.26.8
