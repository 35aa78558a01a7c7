import * as Dialog from '@radix-ui/react-dialog';
import { useRef, type ReactNode } from 'react';

interface ModalProps {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  title: string;
  description?: ReactNode;
  children: ReactNode;
}

/**
 * A dialog that traps focus, closes on Escape and gives the focus back to what opened it (Radix).
 * Radix gives it back only to a Dialog.Trigger, and our dialogs open from state (a button's
 * onClick, a row's action): so the element that had the focus when the dialog opened is kept
 * here and focused again on close, or the page's main content when that element is gone.
 */
export function Modal({ open, onOpenChange, title, description, children }: ModalProps) {
  const opener = useRef<HTMLElement | null>(null);
  // Read while rendering the open dialog, before it (or an autoFocus field in it) takes the focus.
  if (open && opener.current === null && document.activeElement instanceof HTMLElement) opener.current = document.activeElement;
  const giveFocusBack = (event: Event) => {
    event.preventDefault();
    // Radix gives the focus back a moment after the content unmounts (a timer): by then another
    // dialog may be open and have the focus, or this one may have mounted its content anew. A
    // focus inside an open dialog stays where it is, and the opener is kept for the real close.
    if (document.activeElement?.closest('[role="dialog"]')) return;
    const target = opener.current?.isConnected ? opener.current : document.getElementById('main');
    opener.current = null;
    target?.focus();
  };
  return (
    <Dialog.Root open={open} onOpenChange={onOpenChange}>
      <Dialog.Portal>
        <Dialog.Overlay className="overlay" />
        <Dialog.Content className="dialog" onCloseAutoFocus={giveFocusBack}>
          <Dialog.Title>{title}</Dialog.Title>
          {description ? <Dialog.Description>{description}</Dialog.Description> : <Dialog.Description className="visually-hidden">{title}</Dialog.Description>}
          {children}
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
